/**
 * The OpenAPI 3.1 document at GET /openapi.json, generated from the route table's zod
 * schemas (z.toJSONSchema), so it cannot drift from what the routes validate.
 */
import { z } from "zod";
import { writerOnly, type RouteDef } from "./routes.js";
import { errorSchema } from "./schemas.js";
import { WIRE_ERROR_STATUS } from "./errors.js";

type Json = Record<string, unknown>;

function schemaOf(s: z.ZodType, io: "input" | "output"): Json {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { io, unrepresentable: "any" }) as Json;
  return rest;
}

const json = (schema: Json) => ({ "application/json": { schema } });

export function openApiDocument(table: readonly RouteDef[], version: string): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const error = schemaOf(errorSchema, "output");
  for (const r of table) {
    const path = r.url.replace(/:([A-Za-z]+)/g, "{$1}");
    const op: Json = {
      summary: r.summary,
      operationId: `${r.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}`,
      security: r.access === "none" ? [] : [{ bearer: [] }],
      responses: {
        "200": r.answer ? { description: "ok", content: json(schemaOf(r.answer, "output")) } : { description: "ok", content: { [r.produces ?? "text/plain"]: {} } },
        default: { description: "a refusal: `type` names it; its status is fixed per type (see x-error-types)", content: json(error) },
      },
    };
    const parameters: Json[] = [];
    for (const [where, s] of [["path", r.params], ["query", r.query]] as const) {
      if (!s) continue;
      const obj = schemaOf(s, "input") as { properties?: Record<string, Json>; required?: string[] };
      for (const [name, schema] of Object.entries(obj.properties ?? {})) {
        parameters.push({ name, in: where, required: (obj.required ?? []).includes(name), schema });
      }
    }
    if (writerOnly(r) && !r.secretAnswer) parameters.push({ name: "Idempotency-Key", in: "header", required: false, schema: { type: "string", minLength: 1, maxLength: 255 } });
    if (r.url === "/v1/stream") parameters.push({ name: "Last-Event-ID", in: "header", required: false, schema: { type: "string" } });
    if (parameters.length) op.parameters = parameters;
    // Only the writer runs it: a follower answers 307 not-writer (or 503 no-writer).
    if (writerOnly(r)) op["x-writer-only"] = true;
    if (r.body) op.requestBody = { required: true, content: json(schemaOf(r.body, "input")) };
    (paths[path] ??= {})[r.method.toLowerCase()] = op;
  }
  paths["/openapi.json"] = { get: { summary: "This document", security: [{ bearer: [] }], responses: { "200": { description: "ok" } } } };
  paths["/metrics"] = { get: { summary: "Prometheus metrics", security: [{ bearer: [] }], responses: { "200": { description: "ok", content: { "text/plain": {} } } } } };
  return {
    openapi: "3.1.0",
    info: { title: "koinii daemon", version, description: "The wire contract (docs/wire.md). Every answer is {ok: true, ...} or {ok: false, type, error, ...}." },
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    paths,
    "x-error-types": WIRE_ERROR_STATUS,
  };
}
