/** `kiln run` input validation: bad input is refused before anything starts, naming what to fix. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildRunInput, duration } from '../../src/client/run-options.js';
import { EXAMPLE_SCRIPT, git, repoWith } from '../helpers/repo.js';

const model = `scripted:${EXAMPLE_SCRIPT}`;

describe('run options', () => {
  it('a bad .kiln/policy.json stops the run before it starts, naming the field', async () => {
    const repo = repoWith({ 'a.txt': 'x' });
    mkdirSync(join(repo, '.kiln'));
    writeFileSync(join(repo, '.kiln', 'policy.json'), JSON.stringify({ writeAllow: ['src/**', 7] }));
    await expect(buildRunInput({ repo, goal: 'g', model })).rejects.toThrow(/writeAllow\[1\]/);
  });

  it('a bad .kiln/config names the field too', async () => {
    const repo = repoWith({ 'a.txt': 'x' });
    mkdirSync(join(repo, '.kiln'));
    writeFileSync(join(repo, '.kiln', 'config'), JSON.stringify({ setup: 'npm ci' }));
    await expect(buildRunInput({ repo, goal: 'g', model })).rejects.toThrow(/\.kiln\/config: setup: /);
  });

  it('a script that cannot be read is refused up front', async () => {
    const repo = repoWith({ 'a.txt': 'x' });
    await expect(buildRunInput({ repo, goal: 'g', model: 'scripted:/nope/missing.json' })).rejects.toThrow(/missing\.json/);
  });

  it('--model and --review-model take provider:model names: a bad one or a missing key is said before anything starts', async () => {
    const repo = repoWith({ 'a.txt': 'x' });
    await expect(buildRunInput({ repo, goal: 'g', model: 'gemini:gemini-3' }, {})).rejects.toThrow(
      /--model: model "gemini:gemini-3": no provider named "gemini"/,
    );
    await expect(buildRunInput({ repo, goal: 'g', model: 'openai:gpt-5' }, {})).rejects.toThrow(/--model openai:gpt-5 needs OPENAI_API_KEY/);
    expect(await buildRunInput({ repo, goal: 'g', model: 'openai:gpt-5' }, { OPENAI_API_KEY: 'sk-x' })).toMatchObject({ model: 'openai:gpt-5' });
    const local = 'openai-compatible@http://localhost:11434/v1:llama3.1:8b';
    expect(await buildRunInput({ repo, goal: 'g', model, review: 'on', reviewModel: local }, {})).toMatchObject({ model, reviewModel: local });
  });

  it("a model per role from the flag, else KILN_MODEL / KILN_REVIEW_MODEL, else the repo's .kiln/config, else the default (the reviewer: the run's model)", async () => {
    const repo = repoWith({ 'a.txt': 'x' });
    mkdirSync(join(repo, '.kiln'));
    writeFileSync(join(repo, '.kiln', 'config'), JSON.stringify({ model: 'openai:gpt-5', reviewModel: 'anthropic:claude-opus-4-1' }));
    const keys = { OPENAI_API_KEY: 'sk-o', ANTHROPIC_API_KEY: 'sk-a' };
    expect(await buildRunInput({ repo, goal: 'g', review: 'on' }, keys)).toMatchObject({ model: 'openai:gpt-5', reviewModel: 'anthropic:claude-opus-4-1' });
    // review off: no reviewer, whatever the repo names
    expect(await buildRunInput({ repo, goal: 'g' }, keys)).not.toHaveProperty('reviewModel');
    const env = { ...keys, KILN_MODEL: 'anthropic:claude-sonnet-4-6', KILN_REVIEW_MODEL: 'openai:gpt-4.1' };
    expect(await buildRunInput({ repo, goal: 'g', review: 'on' }, env)).toMatchObject({ model: 'anthropic:claude-sonnet-4-6', reviewModel: 'openai:gpt-4.1' });
    expect(await buildRunInput({ repo, goal: 'g', model, review: 'on', reviewModel: model }, env)).toMatchObject({ model, reviewModel: model });
    // where a model came from is where its error points
    await expect(buildRunInput({ repo, goal: 'g' }, {})).rejects.toThrow(
      /^\.kiln\/config "model" openai:gpt-5 needs OPENAI_API_KEY .*; offline, use --model scripted:FILE$/,
    );
    writeFileSync(join(repo, '.kiln', 'config'), JSON.stringify({ model: 'gemini:gemini-3' }));
    await expect(buildRunInput({ repo, goal: 'g' }, keys)).rejects.toThrow(/\.kiln\/config "model": model "gemini:gemini-3": no provider named "gemini"/);
    const noConfig = repoWith({ 'a.txt': 'x' });
    expect(await buildRunInput({ repo: noConfig, goal: 'g', review: 'on' }, keys)).not.toHaveProperty('reviewModel');
  });

  it("attack: a repo's .kiln/config may not name a scripted model (a file on the worker's host)", async () => {
    const repo = repoWith({ 'a.txt': 'x' });
    mkdirSync(join(repo, '.kiln'));
    for (const key of ['model', 'reviewModel']) {
      writeFileSync(join(repo, '.kiln', 'config'), JSON.stringify({ [key]: 'scripted:/etc/passwd' }));
      await expect(buildRunInput({ repo, goal: 'g', model, review: 'on' }, {})).rejects.toThrow(
        new RegExp(`\\.kiln/config: ${key}: a repo's config names API models only`),
      );
    }
  });

  it('--review and --review-model: each bad combination names what to fix; a reviewer script is made absolute', async () => {
    const repo = repoWith({ 'a.txt': 'x' });
    expect(await buildRunInput({ repo, goal: 'g', model })).not.toHaveProperty('review');
    await expect(buildRunInput({ repo, goal: 'g', model, review: 'maybe' })).rejects.toThrow(/--review maybe: use off \(default\), on or required/);
    await expect(buildRunInput({ repo, goal: 'g', model, reviewModel: model })).rejects.toThrow(/--review-model .*--review on/);
    await expect(buildRunInput({ repo, goal: 'g', model, review: 'on', reviewModel: 'claude-opus-5' }, {})).rejects.toThrow(
      /--review-model claude-opus-5 needs ANTHROPIC_API_KEY/,
    );
    expect(await buildRunInput({ repo, goal: 'g', model, review: 'required', reviewModel: model })).toMatchObject({ review: 'required', reviewModel: model });
  });

  it('--attempts and --attempt-model: bounded, and models only with attempts', async () => {
    const repo = repoWith({ 'a.txt': 'x' });
    expect(await buildRunInput({ repo, goal: 'g', model })).not.toHaveProperty('attempts');
    expect(await buildRunInput({ repo, goal: 'g', model, attempts: '3', attemptModel: [model] })).toMatchObject({ attempts: 3, attemptModels: [model] });
    await expect(buildRunInput({ repo, goal: 'g', model, attempts: '9' })).rejects.toThrow(/--attempts 9: at most 8/);
    await expect(buildRunInput({ repo, goal: 'g', model, attempts: 'two' })).rejects.toThrow(/--attempts two: expected a positive whole number/);
    await expect(buildRunInput({ repo, goal: 'g', model, attemptModel: [model] })).rejects.toThrow(/--attempt-model .*--attempts N/);
    await expect(buildRunInput({ repo, goal: 'g', model, attempts: '2', attemptModel: ['scripted:/nope.json'] })).rejects.toThrow(/nope\.json/);
  });

  it('a real model without a key says how to get going', async () => {
    const repo = repoWith({ 'a.txt': 'x' });
    await expect(buildRunInput({ repo, goal: 'g', model: 'claude-sonnet-5-5' }, {})).rejects.toThrow(/ANTHROPIC_API_KEY.*scripted:FILE/);
  });

  it('the repository and its start: a subdirectory means its top level; no repository, no commits and a bad --base each say so', async () => {
    const repo = repoWith({ 'src/a.txt': 'x' });
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    expect(await buildRunInput({ repo: join(repo, 'src'), goal: 'g', model })).toMatchObject({ repo });
    expect(await buildRunInput({ repo, goal: 'g', model, base: head.slice(0, 10) })).toMatchObject({ repo });
    const plain = mkdtempSync(join(tmpdir(), 'kiln-not-a-repo-'));
    await expect(buildRunInput({ repo: plain, goal: 'g', model })).rejects.toThrow(/: not a git repository \(run `git init` and commit first\)/);
    const empty = mkdtempSync(join(tmpdir(), 'kiln-empty-repo-'));
    git(empty, 'init', '-q');
    await expect(buildRunInput({ repo: empty, goal: 'g', model })).rejects.toThrow(/has no commits yet: commit something first/);
    await expect(buildRunInput({ repo, goal: 'g', model, base: 'no-such-ref' })).rejects.toThrow(/--base no-such-ref: not a commit in /);
    // a base that reads like an option is a name that is no commit, never an option to git
    await expect(buildRunInput({ repo, goal: 'g', model, base: '--output=/tmp/x' })).rejects.toThrow(/--base --output=\/tmp\/x: not a commit in /);
  });

  it('durations read like people write them', () => {
    expect(duration('90s', '--x', 1)).toBe(90_000);
    expect(duration('15m', '--x', 1)).toBe(900_000);
    expect(duration('2h', '--x', 1)).toBe(7_200_000);
    expect(duration(undefined, '--x', 5)).toBe(5);
    expect(() => duration('soon', '--approval-timeout', 1)).toThrow(/--approval-timeout soon: expected a duration like/);
  });

  it('good input becomes a complete RunInput with an absolute script path', async () => {
    const repo = repoWith({ 'a.txt': 'x' });
    const input = await buildRunInput({ repo, goal: '  fix it  ', model, check: ['npm test'], approvalTimeout: '30m' });
    expect(input).toMatchObject({ repo, goal: 'fix it', checks: ['npm test'], approvalTimeoutMs: 1_800_000, sandbox: 'bwrap', maxAttempts: 3 });
    expect(input.model).toBe(`scripted:${EXAMPLE_SCRIPT}`);
    expect(input.runId).toMatch(/^run-\d{14}-[0-9a-f]{6}$/);
  });
});

describe('paths with spaces in messages', () => {
  it('are quoted so they can be pasted back into a shell', async () => {
    await expect(buildRunInput({ repo: '/tmp/my projects/no such repo', goal: 'x', model: `scripted:${EXAMPLE_SCRIPT}` })).rejects.toThrow(
      "--repo '/tmp/my projects/no such repo': no such directory",
    );
  });
});
