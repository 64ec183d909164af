/**
 * The run request's shape as JSON Schema, generated from the zod schema in run-input-schema.ts
 * (`z.toJSONSchema(runInputSchema)`; tests/unit/shared/run-input-check.test.ts fails with the new
 * text when they differ). The workflow checks its input against this instead of importing zod:
 * every cached workflow evaluates its own copy of the bundle's modules, and zod's were ~780 KB of
 * each copy's ~1.3 MB (about 39 MB with 50 runs in one worker). Do not edit by hand.
 */
export const RUN_INPUT_JSON_SCHEMA = {
  type: 'object',
  properties: {
    runId: {
      type: 'string',
      pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$',
    },
    repo: {
      type: 'string',
      minLength: 1,
    },
    goal: {
      type: 'string',
      minLength: 1,
      maxLength: 100000,
    },
    base: {
      type: 'string',
      minLength: 1,
      maxLength: 400,
    },
    checks: {
      maxItems: 50,
      type: 'array',
      items: {
        type: 'string',
        minLength: 1,
        maxLength: 10000,
      },
    },
    setup: {
      maxItems: 50,
      type: 'array',
      items: {
        type: 'string',
        minLength: 1,
        maxLength: 10000,
      },
    },
    model: {
      type: 'string',
      minLength: 1,
      maxLength: 4096,
    },
    maxTokens: {
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 9007199254740991,
    },
    temperature: {
      type: 'number',
      minimum: 0,
      maximum: 2,
    },
    sandbox: {
      type: 'string',
      enum: ['bwrap', 'off'],
    },
    approvalMode: {
      type: 'string',
      enum: ['strict', 'default', 'auto'],
    },
    allowTestEdits: {
      type: 'boolean',
    },
    approvalTimeoutMs: {
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 9007199254740991,
    },
    humanTimeoutMs: {
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 9007199254740991,
    },
    budgets: {
      type: 'object',
      properties: {
        maxTurns: {
          type: 'integer',
          exclusiveMinimum: 0,
          maximum: 9007199254740991,
        },
        maxTokens: {
          type: 'integer',
          exclusiveMinimum: 0,
          maximum: 9007199254740991,
        },
        maxUsd: {
          type: 'number',
          minimum: 0,
        },
        maxWallMs: {
          type: 'integer',
          exclusiveMinimum: 0,
          maximum: 9007199254740991,
        },
      },
      required: ['maxTurns', 'maxTokens', 'maxUsd', 'maxWallMs'],
      additionalProperties: false,
    },
    maxAttempts: {
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 10,
    },
    heartbeatTimeoutMs: {
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 9007199254740991,
    },
    commandTimeoutMs: {
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 9007199254740991,
    },
    contextTokens: {
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 9007199254740991,
    },
    turnsPerRun: {
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 9007199254740991,
    },
    hostLossTimeoutMs: {
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 9007199254740991,
    },
    searchAttributes: {
      type: 'boolean',
    },
    allowUnverified: {
      type: 'boolean',
    },
    review: {
      type: 'string',
      enum: ['off', 'on', 'required'],
    },
    reviewModel: {
      type: 'string',
      minLength: 1,
      maxLength: 4096,
    },
    attempts: {
      type: 'integer',
      exclusiveMinimum: 0,
      maximum: 8,
    },
    attemptModels: {
      maxItems: 8,
      type: 'array',
      items: {
        type: 'string',
        minLength: 1,
        maxLength: 4096,
      },
    },
    protect: {
      maxItems: 200,
      type: 'array',
      items: {
        type: 'string',
        minLength: 1,
        maxLength: 1000,
      },
    },
    requestedBy: {
      type: 'object',
      properties: {
        user: {
          type: 'string',
          minLength: 1,
          maxLength: 200,
        },
        tenant: {
          type: 'string',
          maxLength: 200,
        },
        issuedAt: {
          type: 'string',
          maxLength: 100,
        },
        sig: {
          type: 'string',
          pattern: '^[0-9a-f]{64}$',
        },
      },
      required: ['user', 'tenant', 'issuedAt', 'sig'],
      additionalProperties: false,
    },
  },
  required: [
    'runId',
    'repo',
    'goal',
    'checks',
    'setup',
    'model',
    'maxTokens',
    'sandbox',
    'approvalMode',
    'allowTestEdits',
    'approvalTimeoutMs',
    'humanTimeoutMs',
    'budgets',
    'maxAttempts',
    'heartbeatTimeoutMs',
    'commandTimeoutMs',
  ],
  additionalProperties: false,
} as const;
