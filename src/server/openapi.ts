/** The OpenAPI 3.1 document for `kiln serve`, generated from the zod schemas the routes validate with. */
import { z } from 'zod';
import { KILN_VERSION } from '../shared/version.js';
import { Cancel, CreateRun, Decide, ErrorBody, Human, ListRuns, RunSummary } from './schemas.js';

const schema = (s: z.ZodType, io: 'input' | 'output' = 'input') => {
  const { $schema: _, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};
const json = (ref: string) => ({ content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } } });
const err = (description: string) => ({ description, ...json('Error') });
const runId = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const common = {
  '401': err('no token, or a revoked one'),
  '404': err("no such run for this tenant (another tenant's run is a 404 too)"),
  '429': err('rate limit; Retry-After says when to try again'),
};

export function openApiDocument() {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Kiln server',
      version: KILN_VERSION,
      description: 'Start, follow and approve Kiln runs. Auth: Authorization: Bearer TOKEN (`kiln token create`). docs/server.md',
    },
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        CreateRun: schema(CreateRun),
        Decide: schema(Decide),
        Human: schema(Human),
        Cancel: schema(Cancel),
        Error: schema(ErrorBody, 'output'),
        RunSummary: schema(RunSummary, 'output'),
      },
    },
    paths: {
      ...runPaths(),
      ...approvalPaths(),
      '/budget': {
        get: {
          summary: "the caller's tenant's budget ledger: billed, held and limit per scope (any role)",
          responses: { '200': { description: 'the ledger' }, '401': common['401'] },
        },
        put: { summary: 'refused: limits are set by the operator (kiln budget set)', responses: { '403': { description: 'no token may change a limit' } } },
      },
      '/me': { get: { summary: "the token's user, tenant and role", responses: { '200': { description: 'who you are' }, '401': common['401'] } } },
      '/openapi.json': { get: { summary: 'this document', security: [], responses: { '200': { description: 'OpenAPI 3.1' } } } },
    },
  };
}

/** The runs: start, list, read, cancel, follow, and what they left. */
function runPaths() {
  const listParams = Object.keys(ListRuns.shape).map((name) => ({
    name,
    in: 'query',
    required: false,
    schema: schema(ListRuns.shape[name as keyof typeof ListRuns.shape]),
  }));
  return {
    '/runs': {
      post: {
        summary: 'start a run (role runner)',
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            schema: { type: 'string', maxLength: 200 },
            description: 'same key and body: the same run; same key, another body: 409',
          },
        ],
        requestBody: { required: true, ...json('CreateRun') },
        responses: {
          '201': { description: 'started' },
          '200': { description: 'the run this Idempotency-Key started' },
          '400': err('bad input: `field` names it'),
          '403': err('role, or a repo the tenant was not given'),
          '409': err('Idempotency-Key reused with another body'),
          '413': err('body too large'),
          ...common,
          '429': err("rate limit, the tenant's concurrent runs or its USD a day; Retry-After and resetsAt say when"),
        },
      },
      get: {
        summary: "the tenant's runs (fleet filters)",
        parameters: listParams,
        responses: { '200': { description: 'runs' }, '400': err('bad filter'), ...common },
      },
    },
    '/runs/{id}': {
      get: { summary: 'a run: its summary, live state and outcome', parameters: [runId], responses: { '200': { description: 'the run' }, ...common } },
    },
    '/runs/{id}/cancel': {
      post: {
        summary: 'cancel (role runner)',
        parameters: [runId],
        requestBody: { required: false, ...json('Cancel') },
        responses: { '202': { description: 'cancelling' }, '409': err('already ended'), ...common },
      },
    },
    '/runs/{id}/events': {
      get: {
        summary: 'Server-Sent Events: log (id = seq), state, end; resume with Last-Event-ID',
        parameters: [runId, { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' } }],
        responses: { '200': { description: 'text/event-stream' }, ...common },
      },
    },
    '/events': {
      get: {
        summary: "Server-Sent Events: `runs` (the tenant's open runs: id, status, phase) whenever that list changes",
        responses: { '200': { description: 'text/event-stream' }, ...common },
      },
    },
    '/runs/{id}/patch': {
      get: {
        summary: 'the diff so far (live while the worktree exists), else the patch the run left',
        parameters: [runId],
        responses: { '200': { description: 'text/x-diff' }, ...common },
      },
    },
    '/runs/{id}/artifacts': {
      get: { summary: "the run's artifact files", parameters: [runId], responses: { '200': { description: 'names and links' }, ...common } },
    },
    '/runs/{id}/artifacts/{name}': {
      get: {
        summary: 'one artifact file',
        parameters: [runId, { name: 'name', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'the file' }, ...common },
      },
    },
  };
}

/** What waits for a person, and the answers to it. */
function approvalPaths() {
  return {
    '/approvals': {
      get: {
        summary: "pending approvals across the tenant's open runs, with plan and recent log",
        responses: { '200': { description: 'approvals' }, ...common },
      },
    },
    '/runs/{id}/approvals/{approvalId}': {
      post: {
        summary: 'approve or reject (role approver); signed with the user and tenant for the worker to verify',
        parameters: [runId, { name: 'approvalId', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: { required: true, ...json('Decide') },
        responses: {
          '200': { description: 'applied or recorded' },
          '400': err('bad input'),
          '403': err('role'),
          '409': err('the run refused it'),
          ...common,
        },
      },
    },
    '/runs/{id}/human': {
      post: {
        summary: 'hint, accept or abandon a run that waits for a person (role approver)',
        parameters: [runId],
        requestBody: { required: true, ...json('Human') },
        responses: {
          '200': { description: 'applied or recorded' },
          '400': err('bad input'),
          '403': err('role'),
          '409': err('the run is not waiting for a person'),
          ...common,
        },
      },
    },
  };
}
