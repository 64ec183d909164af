/**
 * An attack: a value from the repo's .env must not reach what a run stores. The model
 * here is a fake that quotes the value (a model that read it somehow); prepare, the worktree,
 * redaction and the files are real.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities, defaultDeps } from '../../../src/activities/index.js';
import type { ModelClient } from '../../../src/model/index.js';
import { repoWith } from '../../helpers/repo.js';
import { testInput } from '../../helpers/run-input.js';

const CANARY = 'canary-5d1e0b7a2c';

function quotingModel(text: string): ModelClient {
  return {
    scripted: true,
    model: 'fake',
    async create() {
      return {
        content: [
          { type: 'text', text, citations: null },
          { type: 'tool_use', id: 'toolu_1', name: 'run_command', input: { command: `echo ${text}`, reason: 'quote it' } },
        ] as never,
        stopReason: 'tool_use',
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
        model: 'fake',
        costUsd: 0,
      };
    },
  };
}

function storedText(repo: string, runId: string): string {
  const state = join(repo, '.kiln', 'runs', runId);
  const all: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else all.push(readFileSync(join(d, e.name), 'utf8'));
    }
  };
  walk(state);
  return all.join('\n');
}

async function turnQuoting(text: string) {
  const repo = repoWith({ '.gitignore': '.env\n', 'a.txt': 'x\n' });
  // the user's untracked .env in their checkout: never committed, still a secret
  writeFileSync(join(repo, '.env'), `API_SECRET=${CANARY}\n`);
  const input = testInput({ repo, model: 'fake' });
  const acts = createActivities({ ...defaultDeps(), hostQueue: 'unit-host', model: async () => quotingModel(text) });
  const env = new MockActivityEnvironment();
  await env.run(acts.prepareWorkspace, input);
  const result = await env.run(acts.agentTurn, { runId: input.runId, repo, turn: 1, attempt: 1 });
  return { repo, input, result };
}

describe("the model's own messages are redacted before they are stored", () => {
  it('attack: the model quotes a .env value and its base64: neither reaches conversation.json, the call journal, events or history', async () => {
    const b64 = Buffer.from(CANARY).toString('base64');
    const { repo, input, result } = await turnQuoting(`the secret is ${CANARY} (${b64})`);
    expect(JSON.stringify(result)).not.toContain(CANARY);
    const stored = storedText(repo, input.runId);
    expect(stored).toContain('[REDACTED:known-value]');
    expect(stored).not.toContain(CANARY);
    expect(stored).not.toContain(b64.replace(/=+$/, ''));
  });

  it('control: ordinary words the model says are kept as said', async () => {
    const { repo, input } = await turnQuoting('the session store only stores');
    const convo = readFileSync(join(repo, '.kiln', 'runs', input.runId, 'state', 'conversation.json'), 'utf8');
    expect(convo).toContain('the session store only stores');
  });
});

describe('credentials in git remotes', () => {
  it('attack: `git var -l` prints a remote URL with a bare token (no known shape): the token is a known value', async () => {
    const { urlCredentials } = await import('../../../src/store/secrets.js');
    expect(urlCredentials('[remote "origin"]\n\turl = https://x-access-token:plainTok3n0001@github.com/o/r.git\n')).toEqual(['plainTok3n0001']);
    expect(urlCredentials('[remote "origin"]\n\turl = https://opaqueToken99@git.example.com/r.git\n')).toEqual(['opaqueToken99']);
  });

  it('control: a remote without credentials gives nothing', async () => {
    const { urlCredentials } = await import('../../../src/store/secrets.js');
    expect(urlCredentials('[remote "origin"]\n\turl = https://github.com/o/r.git\n\turl = git@github.com:o/r.git\n')).toEqual([]);
  });
});
