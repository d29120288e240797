#!/usr/bin/env bash
# Mail servers for the mail agent's tests (docs/agents-mail.md "Network layer"), started by
# scripts/provision.sh. Idempotent; needs root on Debian 12 (it adds system users and writes
# under /var/lib), and runs from the repository after `npm ci` (the submission server uses
# the repository's smtp-server and nodemailer).
#
#   Dovecot 2.3 (Debian's dovecot-imapd, dovecot-lmtpd), a throwaway instance under
#   $KOINII_MAIL_DIR (default /var/lib/koinii-mail): IMAP and LMTP on 127.0.0.1 only,
#   plaintext auth (loopback only, no TLS), passwd-files of test users, maildir storage.
#   SMTP submission: scripts/provision/smtp-submission.mjs (the npm smtp-server package) on
#   127.0.0.1, AUTH against the same passwd-files, each message handed to Dovecot's LMTP
#   before the 250 reply; a copy goes to the sender's Sent folder in the same LMTP
#   transaction (sender+Sent@, lmtp_save_to_detail_mailbox) unless the sender's local part
#   starts with "nosent" (a server that does not file submissions, like Stalwart).
#   Cyrus IMAP 3.6 (Debian's cyrus-imapd, cyrus-caldav for httpd with JMAP), a throwaway
#   instance under $KOINII_CYRUS_DIR (default /var/lib/koinii-cyrus): IMAP and JMAP (HTTP,
#   no TLS) on 127.0.0.1, users in a sasldb (tests add theirs with saslpasswd2), mailboxes
#   autocreated on first login with a \Sent folder.
#
# Leaves both running, says on stderr what it started, and prints the connection details as
# KEY=VALUE lines on stdout (the tests' environment).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
REPO=$(pwd)
DIR=${KOINII_MAIL_DIR:-/var/lib/koinii-mail}
IMAP_PORT=${KOINII_MAIL_IMAP_PORT:-10143}
LMTP_PORT=${KOINII_MAIL_LMTP_PORT:-10024}
SMTP_PORT=${KOINII_MAIL_SMTP_PORT:-10587}
DOMAIN=koinii.test
CYRUS_DIR=${KOINII_CYRUS_DIR:-/var/lib/koinii-cyrus}
CYRUS_IMAP_PORT=${KOINII_CYRUS_IMAP_PORT:-11143}
CYRUS_HTTP_PORT=${KOINII_CYRUS_HTTP_PORT:-11080}
CYRUS_LMTP_PORT=${KOINII_CYRUS_LMTP_PORT:-11024}
CONF=$DIR/dovecot.conf
USERS=$DIR/users.d

# cyrus-imapd Conflicts with dovecot-imapd (both provide imap-server), so it is not installed:
# its imapd binary is unpacked from the .deb into $CYRUS_DIR/bin (below). httpd (JMAP) is in
# cyrus-caldav, master and lmtpd in cyrus-common.
print_env() {
  export_env KOINII_MAIL_DIR "$DIR"
  export_env KOINII_MAIL_HOST 127.0.0.1
  export_env KOINII_MAIL_IMAP_PORT "$IMAP_PORT"
  export_env KOINII_MAIL_LMTP_PORT "$LMTP_PORT"
  export_env KOINII_MAIL_SMTP_PORT "$SMTP_PORT"
  export_env KOINII_MAIL_DOMAIN "$DOMAIN"
  export_env KOINII_MAIL_USERS_DIR "$USERS"
  export_env KOINII_MAIL_DOVECOT_CONF "$CONF"
  export_env KOINII_CYRUS_IMAP_PORT "$CYRUS_IMAP_PORT"
  export_env KOINII_CYRUS_HTTP_PORT "$CYRUS_HTTP_PORT"
  export_env KOINII_CYRUS_SASLDB "$CYRUS_DIR/sasldb2"
}
all_up() { for p in "$IMAP_PORT" "$LMTP_PORT" "$SMTP_PORT" "$CYRUS_IMAP_PORT" "$CYRUS_HTTP_PORT"; do port_open "$p" || return 1; done; }
if ! is_root || checking; then
  all_up && [ -f "$CONF" ] && { print_env; exit 0; }
  checking && die "check: the mail servers are not all up (ports $IMAP_PORT $LMTP_PORT $SMTP_PORT $CYRUS_IMAP_PORT $CYRUS_HTTP_PORT)"
  die "the mail servers (Dovecot, SMTP submission, Cyrus) need root to start: run \`sudo bash scripts/provision.sh mail\` once, then start the tests again"
fi
need_debs dovecot-imapd dovecot-lmtpd cyrus-common cyrus-caldav sasl2-bin
# Debian's own instance is not used; stop it if the package's scripts started one.
if [ -f /run/dovecot/master.pid ] && kill -0 "$(cat /run/dovecot/master.pid)" 2>/dev/null; then
  dovecot -c /etc/dovecot/dovecot.conf stop || true
fi

id kmail >/dev/null 2>&1 || useradd --system --no-create-home --home-dir "$DIR/mail" --shell /usr/sbin/nologin kmail
mkdir -p "$DIR/run" "$DIR/state" "$DIR/mail" "$USERS"
chown kmail:kmail "$DIR/mail"
# One passwd-file per user (users.d/<user>): a test adds a user by writing a new file, which
# Dovecot reads on first lookup (a single shared file is re-read only when its mtime second
# changes, so two users added within one second would race).
for u in alice bob carol nosent-dave; do
  [ -f "$USERS/$u@$DOMAIN" ] || echo "$u@$DOMAIN:{PLAIN}$u-pass" > "$USERS/$u@$DOMAIN"
done

cat > "$CONF.new" <<CONF
# Throwaway Dovecot for tests: loopback only, plaintext auth, no TLS. Written by mail.sh.
instance_name = koinii-mail
base_dir = $DIR/run
state_dir = $DIR/state
protocols = imap lmtp
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
log_path = $DIR/dovecot.log
mail_location = maildir:~/Maildir
# Throwaway server, never crashed by the tests: skip fsync (a submission took 34 ms with it).
mail_fsync = never
mail_uid = kmail
mail_gid = kmail
first_valid_uid = 1
recipient_delimiter = +
lmtp_save_to_detail_mailbox = yes
mail_max_userip_connections = 500
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u $USERS/%u
}
userdb {
  driver = static
  # allow_all_users: any address has a mailbox (test recipients are made up per test)
  args = uid=kmail gid=kmail home=$DIR/mail/%d/%n allow_all_users=yes
}
namespace inbox {
  inbox = yes
  separator = /
  mailbox Sent {
    special_use = \Sent
    auto = subscribe
  }
  mailbox Drafts {
    special_use = \Drafts
    auto = subscribe
  }
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = $IMAP_PORT
  }
  inet_listener imaps {
    port = 0
  }
  process_min_avail = 2
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = $LMTP_PORT
  }
}
service imap {
  process_limit = 1024
}
CONF
changed=0
if ! cmp -s "$CONF.new" "$CONF" 2>/dev/null; then mv "$CONF.new" "$CONF"; changed=1; else rm -f "$CONF.new"; fi

# Liveness is judged by the ports (a killed process can linger as a zombie and pass kill -0).
if port_open "$IMAP_PORT" && port_open "$LMTP_PORT"; then
  if [ $changed = 1 ]; then dovecot -c "$CONF" reload 9>&- </dev/null >/dev/null; say "dovecot reloaded ($CONF)"; sleep 1; fi
else
  dovecot -c "$CONF" stop 2>/dev/null || true
  # Daemons get neither the lock (fd 9) nor the caller's stdout/stderr: a caller that waits
  # for the output to close (execFileSync in the tests) would otherwise wait forever.
  dovecot -c "$CONF" 9>&- </dev/null >>"$DIR/start.log" 2>&1 || { cat "$DIR/start.log" >&2; die "dovecot did not start (log above, $DIR/start.log)"; }
  say "started dovecot (pid $(cat "$DIR/run/master.pid")), IMAP 127.0.0.1:$IMAP_PORT, LMTP 127.0.0.1:$LMTP_PORT, config $CONF, log $DIR/dovecot.log"
fi

SMTP_PID=$DIR/smtp-submission.pid
if ! port_open "$SMTP_PORT"; then
  KOINII_MAIL_USERS_DIR=$USERS KOINII_MAIL_SMTP_PORT=$SMTP_PORT KOINII_MAIL_LMTP_PORT=$LMTP_PORT \
    setsid nohup node "$REPO/scripts/provision/smtp-submission.mjs" 9>&- >"$DIR/smtp-submission.log" 2>&1 </dev/null &
  echo $! > "$SMTP_PID"
  say "started SMTP submission (pid $(cat "$SMTP_PID")) on 127.0.0.1:$SMTP_PORT -> LMTP, log $DIR/smtp-submission.log"
fi

# ---- Cyrus (JMAP)
mkdir -p "$CYRUS_DIR/conf" "$CYRUS_DIR/spool" "$CYRUS_DIR/run" "$CYRUS_DIR/bin"
if [ ! -x "$CYRUS_DIR/bin/imapd" ]; then
  ver=$(dpkg-query -W -f '${Version}' cyrus-common)
  tmp=$(mktemp -d) && chmod 755 "$tmp"
  # apt-get download needs the package lists; a machine whose lists were cleaned gets them once.
  (cd "$tmp" && { apt-get download -qq "cyrus-imapd=$ver" >/dev/null 2>&1 || { apt-get update -qq >&2 && apt-get download -qq "cyrus-imapd=$ver" >/dev/null; }; } && dpkg -x cyrus-imapd_*.deb x)
  cp "$tmp/x/usr/lib/cyrus/bin/imapd" "$CYRUS_DIR/bin/imapd"
  rm -rf "$tmp"
fi
cat > "$CYRUS_DIR/imapd.conf.new" <<CONF
configdirectory: $CYRUS_DIR/conf
partition-default: $CYRUS_DIR/spool
admins: cyrus
sasl_pwcheck_method: auxprop
sasl_auxprop_plugin: sasldb
sasl_sasldb_path: $CYRUS_DIR/sasldb2
sasl_mech_list: PLAIN LOGIN
allowplaintext: yes
httpmodules: jmap
httpallowcompress: no
conversations: yes
conversations_db: twoskip
unixhierarchysep: yes
altnamespace: yes
autocreate_post: yes
autocreate_quota: 0
autocreate_inbox_folders: Sent
autocreate_specialuse_folders: Sent
xlist-sent: Sent
idlesocket: $CYRUS_DIR/run/idle
lmtpsocket: $CYRUS_DIR/run/lmtp
notifysocket: $CYRUS_DIR/run/notify
syslog_prefix: koinii-cyrus
CONF
cat > "$CYRUS_DIR/cyrus.conf.new" <<CONF
START {
  recover cmd="ctl_cyrusdb -r -C $CYRUS_DIR/imapd.conf"
}
SERVICES {
  imap cmd="$CYRUS_DIR/bin/imapd -C $CYRUS_DIR/imapd.conf" listen="127.0.0.1:$CYRUS_IMAP_PORT" prefork=0
  http cmd="httpd -C $CYRUS_DIR/imapd.conf" listen="127.0.0.1:$CYRUS_HTTP_PORT" prefork=0
  lmtp cmd="lmtpd -C $CYRUS_DIR/imapd.conf -a" listen="127.0.0.1:$CYRUS_LMTP_PORT" prefork=0
}
EVENTS {
  checkpoint cmd="ctl_cyrusdb -c -C $CYRUS_DIR/imapd.conf" period=30
}
CONF
cyrus_changed=0
for f in imapd.conf cyrus.conf; do
  if ! cmp -s "$CYRUS_DIR/$f.new" "$CYRUS_DIR/$f" 2>/dev/null; then mv "$CYRUS_DIR/$f.new" "$CYRUS_DIR/$f"; cyrus_changed=1; else rm -f "$CYRUS_DIR/$f.new"; fi
done
[ -f "$CYRUS_DIR/sasldb2" ] || echo "bob-pass" | saslpasswd2 -f "$CYRUS_DIR/sasldb2" -p -c bob
chown -R cyrus:mail "$CYRUS_DIR"
if [ $cyrus_changed = 1 ] && [ -f "$CYRUS_DIR/run/master.pid" ]; then kill "$(cat "$CYRUS_DIR/run/master.pid")" 2>/dev/null || true; sleep 1; fi
if ! port_open "$CYRUS_IMAP_PORT" || ! port_open "$CYRUS_HTTP_PORT"; then
  /usr/lib/cyrus/bin/master -C "$CYRUS_DIR/imapd.conf" -M "$CYRUS_DIR/cyrus.conf" -p "$CYRUS_DIR/run/master.pid" -d 9>&- </dev/null >>"$CYRUS_DIR/start.log" 2>&1 || { cat "$CYRUS_DIR/start.log" >&2; die "Cyrus did not start (log above, $CYRUS_DIR/start.log)"; }
  sleep 0.5
  say "started Cyrus (pid $(cat "$CYRUS_DIR/run/master.pid" 2>/dev/null || echo '?')), IMAP 127.0.0.1:$CYRUS_IMAP_PORT, JMAP http://127.0.0.1:$CYRUS_HTTP_PORT/jmap, config $CYRUS_DIR/imapd.conf"
fi

for i in $(seq 1 100); do
  if port_open "$IMAP_PORT" && port_open "$LMTP_PORT" && port_open "$SMTP_PORT" && port_open "$CYRUS_IMAP_PORT" && port_open "$CYRUS_HTTP_PORT"; then break; fi
  sleep 0.1
done
for p in "$IMAP_PORT" "$LMTP_PORT" "$SMTP_PORT" "$CYRUS_IMAP_PORT" "$CYRUS_HTTP_PORT"; do
  port_open "$p" || { say "mail: port $p is not listening"; tail -n 20 "$DIR/dovecot.log" "$DIR/smtp-submission.log" >&2 || true; exit 1; }
done

print_env
