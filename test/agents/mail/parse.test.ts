import { describe, expect, it } from "vitest";
import {
  authVerdict,
  decodeEncodedWords,
  jmapKeywordsToFlags,
  ownFeatures,
  ownText,
  parseAddressList,
  parseHeaders,
  parseMailDate,
  parseMessage,
  parseMessageIds,
} from "../../../src/agents/mail/index.js";
import { meta, rawMail } from "./fixtures.js";

describe("dates (reference §2.3 vectors)", () => {
  it.each([
    ["Thu, 24 Sep 2026 18:22:20 -0000", "2026-09-24T18:22:20Z"],
    ["Mon, 14 Sep 2026 14:00:45 GMT", "2026-09-14T14:00:45Z"],
    ["Wed, 9 Sep 2026 21:03:24 -0500 (CDT)", "2026-09-10T02:03:24Z"],
    ["24 Sep 2026 18:22 UT", "2026-09-24T18:22:00Z"],
    ["Thu, 24 Sep 2026 18:22:20 Z", "2026-09-24T18:22:20Z"],
    ["Thu, 24 Sep 2026 18:22:20 UTC", "2026-09-24T18:22:20Z"],
    ["Thu, 24 Sep 2026 18:22:20 +0200", "2026-09-24T16:22:20Z"],
    ["Thu, 24 Sep 26 18:22:20 EDT", "2026-09-24T22:22:20Z"],
    ["Thu,  24  Sep 2026\t18:22:20 +0000 (Coordinated Universal Time)", "2026-09-24T18:22:20Z"],
  ])("%s -> %s", (input, out) => {
    expect(parseMailDate(input)).toBe(out);
  });

  it("-0000 is UTC, not local time", () => {
    expect(parseMailDate("Thu, 24 Sep 2026 18:22:20 -0000")).toBe(parseMailDate("Thu, 24 Sep 2026 18:22:20 +0000"));
  });

  it.each(["", "yesterday", "Thu, 31 Feb 2026 10:00:00 +0000", "Thu, 24 Sep 2026 25:00:00 +0000", "Thu, 24 Foo 2026 10:00:00 +0000", "Thu, 24 Sep 2026 10:00:00", "Thu, 24 Sep 2026 10:00:00 +9900"])(
    "a bad date %j reads as null",
    (input) => {
      expect(parseMailDate(input)).toBeNull();
    },
  );

  it("a bad Date header falls back to the server's date, a missing one too", () => {
    const bad = parseMessage(rawMail({ From: "a@b.org", Date: "soon" }, "x"), meta({ internal_date: "2026-09-01T00:00:00Z" }));
    expect(bad.ref.date).toBe("2026-09-01T00:00:00Z");
    const none = parseMessage(rawMail({ From: "a@b.org" }, "x"), meta());
    expect(none.ref.date).toBeNull();
  });
});

describe("addresses, ids, encoded words", () => {
  it("parses the reference's three-address vector", () => {
    expect(parseAddressList('"Flach, Nick" <Nick@Example.com>, bare@x.org, =?utf-8?Q?Ren=C3=A9?= <r@y.z>')).toEqual([
      { name: "Flach, Nick", email: "nick@example.com" },
      { name: null, email: "bare@x.org" },
      { name: "René", email: "r@y.z" },
    ]);
  });

  it("flattens groups, reads old comment names, drops entries without @", () => {
    expect(parseAddressList("team: a@x.org, b@x.org;, undisclosed-recipients:;")).toEqual([
      { name: null, email: "a@x.org" },
      { name: null, email: "b@x.org" },
    ]);
    expect(parseAddressList("c@x.org (Carla C)")).toEqual([{ name: "Carla C", email: "c@x.org" }]);
    expect(parseAddressList('"a, <b>" <real@x.org>')).toEqual([{ name: "a, <b>", email: "real@x.org" }]);
  });

  it("joins adjacent encoded words without the gap and keeps other blanks", () => {
    expect(decodeEncodedWords("=?UTF-8?B?SGVsbG8=?= =?UTF-8?B?IHdvcmxk?=")).toBe("Hello world");
    expect(decodeEncodedWords("Re: =?iso-8859-1?Q?caf=E9?= ok")).toBe("Re: café ok");
    expect(decodeEncodedWords("=?utf-8?q?a_b?=")).toBe("a b");
    // A two-byte character split over two words survives.
    expect(decodeEncodedWords("=?UTF-8?B?w6k=?= =?UTF-8?Q?=C3=A9?=")).toBe("éé");
    expect(decodeEncodedWords("=?x-unknown?Q?abc?=")).toBe("abc");
  });

  it("keeps message-id brackets and ignores junk between ids", () => {
    expect(parseMessageIds("<a@x> junk <b@y>\r\n <c@z>")).toEqual(["<a@x>", "<b@y>", "<c@z>"]);
  });

  it("unfolds folded header lines", () => {
    const h = parseHeaders("Subject: a long\r\n  folded\r\n\tsubject\r\nTo: x@y.org");
    expect(h.get("subject")).toEqual(["a long  folded\tsubject"]);
    const { ref } = parseMessage(rawMail({ From: "a@b.org", Subject: "=?UTF-8?B?SGVsbG8=?=\r\n =?UTF-8?B?IHdvcmxk?=" }, "x"), meta());
    expect(ref.subject).toBe("Hello world");
  });

  it("maps JMAP keywords to IMAP flags", () => {
    expect(jmapKeywordsToFlags({ $seen: true, $answered: true, $flagged: false, $custom: true })).toEqual(["\\Seen", "\\Answered", "$custom"]);
  });
});

describe("own text (reference §2.3 vectors)", () => {
  it("cuts at a Gmail attribution", () => {
    const own = ownText("Test good\n\nOn Wed, 23 Sep 2026 at 10:00, Kannaka <k@x> wrote:\n> Did it arrive?");
    expect(own).toBe("Test good");
    expect(ownFeatures(own)).toEqual({ chars: 9, question: false, fyi: false });
  });

  it("cuts at a forwarded block and keeps FYI", () => {
    const own = ownText("Fyi.. \n\n====== Forwarded message ======\nFrom: V\nWhat do you think?");
    expect(ownFeatures(own)).toMatchObject({ question: false, fyi: true });
  });

  it("removes URLs before looking for a question mark", () => {
    expect(ownFeatures(ownText("see https://example.com/a?utm_source=x&b=1 for more")).question).toBe(false);
    expect(ownFeatures(ownText("write to mailto:a@b.org?subject=x")).question).toBe(false);
    expect(ownFeatures(ownText("Which tables feed msgs_per_bot?")).question).toBe(true);
  });

  it.each([
    ["a wrapped Gmail attribution", "Sure.\nOn Wed, Sep 23, 2026 at 10:00 AM Nick Flach <\nnick@x.com> wrote:\n> Can you?", "Sure."],
    ["Outlook From/Sent", "Done.\nFrom: Nick\nSent: Wednesday\nSubject: Can you?", "Done."],
    ["Outlook From/Date", "Done.\nFrom: Nick\nDate: Wednesday\nCan you?", "Done."],
    ["-----Original Message", "Yes.\n-----Original Message-----\nCan you?", "Yes."],
    ["Zoho ---- On ... ----", "Yes.\n---- On Wed, 23 Sep 2026 Nick <n@x> wrote ----\nCan you?", "Yes."],
    ["a > quote in the middle", "Top\n> quoted?\nBottom", "Top\nBottom"],
    ["a signature", "Thanks.\n-- \nNick · Call me? +1 555", "Thanks."],
    ["a From: line alone is not a boundary", "From: the start\nit went well", "From: the start\nit went well"],
  ])("%s", (_name, text, own) => {
    expect(ownText(text)).toBe(own);
  });
});

describe("the message", () => {
  const body = "Here is the key sk-THISMUSTNOTBESTORED and a secret phrase purple elephant.\n";
  const raw = rawMail(
    {
      "Return-Path": "<bounces+abc=x.org@mailer.example>",
      From: '"Vincent" <Vincent@Example.org>',
      To: "kannaka@spacechild.love, Other <o@x.org>",
      Cc: "c@x.org",
      Subject: "plan",
      Date: "Thu, 24 Sep 2026 18:22:20 -0000",
      "Message-ID": "<m1@example.org>",
      "In-Reply-To": "<m0@spacechild.love>",
      References: "<root@x> <m0@spacechild.love>",
      "Auto-Submitted": "No",
      "List-Id": "Team <team.example.org>",
      "List-Unsubscribe": "<mailto:u@x>",
      Precedence: "Bulk",
      "Feedback-ID": "1:2:3",
      "Authentication-Results": "mx.zoho.com; dkim=pass header.d=example.org",
    },
    body,
  );

  it("reads every header the rules need", () => {
    const { ref } = parseMessage(raw, meta({ uid: 42, server_id: "7:42", flags: ["\\Seen"] }));
    expect(ref).toMatchObject({
      account: "zoho",
      uid: 42,
      message_id: "<m1@example.org>",
      in_reply_to: ["<m0@spacechild.love>"],
      references: ["<root@x>", "<m0@spacechild.love>"],
      from: { name: "Vincent", email: "vincent@example.org" },
      to: [{ email: "kannaka@spacechild.love" }, { name: "Other", email: "o@x.org" }],
      cc: [{ email: "c@x.org" }],
      date: "2026-09-24T18:22:20Z",
      flags: ["\\Seen"],
      auto: { list_id: "Team <team.example.org>", list_unsubscribe: true, auto_submitted: "no", precedence: "bulk", feedback_id: true, return_path: "bounces+abc=x.org@mailer.example" },
      auth: { dkim: "pass", from_authenticated: true },
    });
    expect(ref.body_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("stores no body: neither a secret nor a phrase reaches the serialised ref", () => {
    const parsed = parseMessage(raw, meta());
    const json = JSON.stringify(parsed.ref);
    expect(json).not.toContain("sk-");
    expect(json).not.toContain("purple elephant");
    expect(parsed.ownText).toContain("purple elephant"); // transient, for commitments only
  });

  it("hashes the body as served: same body same hash, one byte different hash", () => {
    const a = parseMessage(rawMail({ From: "a@b.org", Subject: "x" }, "same"), meta()).ref.body_hash;
    const b = parseMessage(rawMail({ From: "c@d.org", Subject: "y" }, "same"), meta()).ref.body_hash;
    const c = parseMessage(rawMail({ From: "a@b.org", Subject: "x" }, "same!"), meta()).ref.body_hash;
    expect(a).toBe(b);
    expect(a).not.toBe(c);
  });

  it("takes the first text/plain part, skipping attachments, decoding base64 and latin-1", () => {
    const mime = [
      "--b1",
      "Content-Type: text/plain; charset=utf-8",
      "Content-Disposition: attachment; filename=notes.txt",
      "",
      "attached question?",
      "--b1",
      'Content-Type: multipart/alternative; boundary="b2"',
      "",
      "--b2",
      "Content-Type: text/plain; charset=iso-8859-1",
      "Content-Transfer-Encoding: base64",
      "",
      Buffer.from("Caf\u00e9 ready", "latin1").toString("base64"),
      "--b2",
      "Content-Type: text/html",
      "",
      "<p>html version?</p>",
      "--b2--",
      "--b1--",
    ].join("\r\n");
    const { ownText: own, ref } = parseMessage(rawMail({ From: "a@b.org", "Content-Type": 'multipart/mixed; boundary="b1"' }, mime), meta());
    expect(own).toBe("Café ready");
    expect(ref.own.question).toBe(false);
  });

  it("falls back to text/html with tags, style and script removed", () => {
    const html = "<html><style>p{}</style><script>alert('?')</script><p>Hi &amp; welcome</p><div>Ready&#33;</div>br<br>end</html>";
    const { ownText: own } = parseMessage(rawMail({ From: "a@b.org", "Content-Type": "text/html; charset=utf-8" }, html), meta());
    expect(own).toBe("Hi & welcome\n\nReady!\nbr\nend");
  });

  it("decodes quoted-printable with soft line breaks", () => {
    const { ownText: own } = parseMessage(rawMail({ From: "a@b.org", "Content-Transfer-Encoding": "quoted-printable" }, "Caf=C3=A9 is a very long line that was =\nsoft broken"), meta());
    expect(own).toBe("Café is a very long line that was soft broken");
  });

  it("accepts LF-only messages and a message without a body", () => {
    const { ref, ownText: own } = parseMessage("From: a@b.org\nSubject: lf\n\nbody?\n", meta());
    expect(ref.subject).toBe("lf");
    expect(own).toBe("body?");
    expect(parseMessage("From: a@b.org\r\nSubject: no body", meta()).ownText).toBe("");
  });

  it("stops at the MIME depth bound instead of recursing forever", () => {
    let body = "deep text";
    let ct = "text/plain";
    for (let i = 0; i < 12; i++) {
      body = `--x${i}\r\nContent-Type: ${ct}\r\n\r\n${body}\r\n--x${i}--`;
      ct = `multipart/mixed; boundary=x${i}`;
    }
    expect(parseMessage(rawMail({ From: "a@b.org", "Content-Type": ct }, body), meta()).ownText).toBe("");
  });
});

describe("Authentication-Results (M5)", () => {
  const from = { name: null, email: "v@example.org" };
  const h = (...values: string[]) => parseHeaders(values.map((v) => `Authentication-Results: ${v}`).join("\r\n"));

  it.each([
    ["dmarc pass", "mx.zoho.com; dmarc=pass (p=none) header.from=example.org", true],
    ["aligned dkim on a subdomain", "mx.zoho.com; dkim=pass header.d=mail.example.org", true],
    ["aligned spf", "mx.zoho.com; spf=pass smtp.mailfrom=bounce@example.org", true],
    ["dkim for another domain", "mx.zoho.com; dkim=pass header.d=evil.org", false],
    ["dkim fail", "mx.zoho.com; dkim=fail header.d=example.org", false],
    ["a look-alike suffix", "mx.zoho.com; dkim=pass header.d=notexample.org", false],
    ["nothing", "mx.zoho.com; none", false],
  ])("%s", (_n, value, ok) => {
    expect(authVerdict(h(value), from).from_authenticated).toBe(ok);
  });

  it("reads only the topmost header: a forged one further down does not count", () => {
    const v = authVerdict(h("mx.zoho.com; dkim=fail header.d=example.org", "evil.example; dkim=pass header.d=example.org"), from);
    expect(v.from_authenticated).toBe(false);
    expect(v.authserv_id).toBe("mx.zoho.com");
  });

  it("with trusted authserv-ids, reads only those", () => {
    const headers = h("forged.example; dmarc=pass", "mx.zoho.com; dkim=pass header.d=example.org");
    expect(authVerdict(headers, from, ["mx.zoho.com"]).from_authenticated).toBe(true);
    expect(authVerdict(h("forged.example; dmarc=pass"), from, ["mx.zoho.com"]).from_authenticated).toBe(false);
  });
});
