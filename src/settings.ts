/**
 * Every `KILN_*` variable Kiln reads, in one table: its type, its default, what it does and who
 * sets it. Nothing else in src/ or bench/ reads a `KILN_*` variable; code asks `settings()` (this
 * process's environment) or `settingsFrom(env)` (an environment a caller or a test hands in). The
 * README's "Settings" table is this table, and tests/unit/settings.test.ts keeps the two the same.
 *
 * Host code only: workflow code must not see the environment, so this lives outside src/shared.
 *
 * Each value is parsed the first time it is asked for, so a bad one stops only what uses it, with
 * one line that names the variable and says what to put there. Where a default depends on the
 * machine or on another module's constant, the value is undefined when unset and the caller
 * applies the default the table names.
 */
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { UsageError } from './shared/errors.js';

/** A `KILN_*` variable with a value Kiln cannot use: the message names it and says what to fix. */
export class SettingsError extends UsageError {}

/** Who is expected to set a variable. */
type Who = 'operator' | 'user' | 'operator, user' | 'bench' | 'tests';

/** A variable's raw value in, its typed value out (undefined: unset, the caller's default). */
type Parse<T> = z.ZodType<T, string | undefined>;

interface Setting<T> {
  name: `KILN_${string}`;
  /** as the README shows it */
  type: string;
  /** as the README shows it */
  default: string;
  who: Who;
  doc: string;
  parse: Parse<T>;
}

const setting = <T>(s: Setting<T>): Setting<T> => s;

const raw = z.string().optional();
/** The value as given, unset when empty. */
const text = raw.transform((v) => v || undefined);
/** The value without surrounding blanks, unset when blank. */
const trimmed = raw.transform((v) => v?.trim() || undefined);
/** On when the value is exactly this. */
const is = (on: string) => raw.transform((v) => v === on);
/**
 * A number of the kind most settings take (bytes, milliseconds). Lenient on purpose: unset,
 * blank, negative or not a number is the default, and zero too unless the setting gives zero a
 * meaning (`zero`), so a typo never stops a worker that runs fine on the default.
 */
const count = (o: { zero?: boolean } = {}) =>
  raw.transform((v) => {
    const t = v?.trim();
    const n = t ? Number(t) : NaN;
    return Number.isFinite(n) && (n > 0 || (o.zero === true && n === 0)) ? n : undefined;
  });
/** `Number(value) || default`, as the CLI's own numbers have always been read. */
const number = raw.transform((v) => Number(v) || undefined);
const list = (v: string | undefined, sep: string): string[] =>
  (v ?? '')
    .split(sep)
    .map((s) => s.trim())
    .filter(Boolean);

const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;
/** Comma-separated IPv4 networks; a malformed one is an error, not ignored. */
const cidrs = raw.transform((v, ctx) => {
  const nets = list(v, ',');
  const bad = nets.find((n) => {
    const m = CIDR.exec(n);
    return !m || m.slice(1, 5).some((o) => Number(o) > 255) || Number(m[5]) > 32;
  });
  if (bad !== undefined) ctx.addIssue({ code: 'custom', message: `"${bad}" is not an IPv4 network like 10.1.2.0/24` });
  return nets;
});

const LOG_LEVELS = z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']);

const DEFS = {
  // where Kiln keeps things
  home: setting({
    name: 'KILN_HOME',
    type: 'path',
    default: '`~/.kiln` (rebuildable caches: `~/.cache/kiln`)',
    who: 'operator, user',
    doc: "Kiln's own directory: the dev server's SQLite file, trust records, user policy, approval key, server tokens and tenants, caches and eval reports.",
    parse: text,
  }),
  cacheDir: setting({
    name: 'KILN_CACHE_DIR',
    type: 'path',
    default: '`$KILN_HOME/check-caches`, else `~/.cache/kiln/check-caches`',
    who: 'operator',
    doc: 'Where the checks keep their caches between runs (one directory per repo).',
    parse: text,
  }),

  // the Temporal side
  taskQueue: setting({
    name: 'KILN_TASK_QUEUE',
    type: 'string',
    default: '`kiln`',
    who: 'operator, user',
    doc: 'The shared task queue: separates Kiln installations (and test runs) on one Temporal server. Clients and workers must agree.',
    parse: text,
  }),
  host: setting({
    name: 'KILN_HOST',
    type: 'string',
    default: "the machine's host name",
    who: 'operator',
    doc: "This worker's host name, which names the host queue that activities touching its worktrees are routed to.",
    parse: text,
  }),
  deployment: setting({
    name: 'KILN_DEPLOYMENT',
    type: 'string',
    default: 'the task queue',
    who: 'operator',
    doc: 'The Worker Deployment a worker belongs to (`--deployment`); letters, digits and `_ - : /`.',
    parse: trimmed,
  }),
  buildId: setting({
    name: 'KILN_BUILD_ID',
    type: 'string',
    default: "Kiln's version and a hash of the workflow code",
    who: 'operator',
    doc: "This worker's build in its deployment (`--build-id`); runs are pinned to the build that started them.",
    parse: trimmed,
  }),
  versioningOff: setting({
    name: 'KILN_VERSIONING',
    type: '`off`',
    default: 'on',
    who: 'operator',
    doc: '`off` runs the worker unversioned: runs are not pinned to a build (`--no-versioning`).',
    parse: is('off'),
  }),
  metricsAddr: setting({
    name: 'KILN_METRICS_ADDR',
    type: 'host:port',
    default: 'off',
    who: 'operator',
    doc: "Serve the worker's Prometheus metrics at `http://HOST:PORT/metrics` (`--metrics`).",
    parse: trimmed,
  }),
  logLevel: setting({
    name: 'KILN_LOG_LEVEL',
    type: '`TRACE` `DEBUG` `INFO` `WARN` `ERROR`',
    default: '`ERROR` (`kiln worker`: `WARN`)',
    who: 'operator, user',
    doc: "The Temporal SDK's log level in this process (any case; anything else is the default).",
    parse: raw.transform((v) => LOG_LEVELS.safeParse((v ?? '').toUpperCase()).data),
  }),
  uiUrl: setting({
    name: 'KILN_UI_URL',
    type: 'URL',
    default: "what a running `kiln dev` left in `$KILN_HOME/dev.json`, else the dev server's",
    who: 'user',
    doc: 'The Temporal Web UI that printed links point at.',
    parse: text,
  }),
  temporalCli: setting({
    name: 'KILN_TEMPORAL_CLI',
    type: 'path',
    default: 'the one `kiln setup` built',
    who: 'operator, user',
    doc: 'The `temporal` binary to use (it must exist).',
    parse: text,
  }),
  temporalSchemaDir: setting({
    name: 'KILN_TEMPORAL_SCHEMA_DIR',
    type: 'path',
    default: "the server module's `schema/postgresql/v12` in the Go module cache",
    who: 'operator',
    doc: "The Temporal server's PostgreSQL schema files, for `kiln cluster`.",
    parse: text,
  }),
  pgBin: setting({
    name: 'KILN_PG_BIN',
    type: 'path',
    default: "the newest `/usr/lib/postgresql/N/bin`, else `pg_config`'s",
    who: 'operator',
    doc: "The directory holding PostgreSQL's `initdb` and `postgres`, for `kiln cluster`.",
    parse: text,
  }),
  shutdownGraceMs: setting({
    name: 'KILN_SHUTDOWN_GRACE_MS',
    type: 'ms',
    default: '15000',
    who: 'operator, user',
    doc: 'How long a worker waits for activities in flight when told to stop.',
    parse: number,
  }),
  optimizeForSize: setting({
    name: 'KILN_OPTIMIZE_FOR_SIZE',
    type: '`0`',
    default: 'on',
    who: 'operator',
    // bin/kiln.js reads it itself: V8's flags must be set before any of Kiln's modules load
    doc: '`0` starts `kiln worker` and `kiln dev` without `--optimize-for-size`: more runs a minute, more memory.',
    parse: raw.transform((v) => v !== '0'),
  }),

  // what the worker's operator allows a run
  allowSandboxOff: setting({
    name: 'KILN_ALLOW_SANDBOX_OFF',
    type: '`1`',
    default: 'refused',
    who: 'operator',
    doc: 'Let runs ask for `--sandbox off` (unsafe; `--allow-sandbox-off`).',
    parse: is('1'),
  }),
  repoRoots: setting({
    name: 'KILN_REPO_ROOTS',
    type: 'absolute paths, `:`-separated',
    default: 'any repo',
    who: 'operator',
    doc: 'The only directories whose repos a run may name (compared as real paths).',
    parse: raw.transform((v, ctx) => {
      const roots = v?.split(':').filter((r) => r.trim() !== '');
      if (!roots?.length) return undefined;
      const bad = roots.find((r) => !isAbsolute(r));
      if (bad !== undefined) ctx.addIssue({ code: 'custom', message: `"${bad}" is not an absolute path (colon-separated directories)` });
      return roots;
    }),
  }),
  allowClientSetup: setting({
    name: 'KILN_ALLOW_CLIENT_SETUP',
    type: '`0` `1`',
    default: '`1`',
    who: 'operator',
    doc: "`0` refuses a client's own setup commands (`--setup`; they run with network).",
    parse: raw.transform((v, ctx) => {
      const t = v?.trim();
      if (t === undefined || t === '') return undefined;
      if (t !== '0' && t !== '1') ctx.addIssue({ code: 'custom', message: `expected 0 or 1, got "${t}"` });
      return t === '1';
    }),
  }),
  runCeilings: setting({
    name: 'KILN_RUN_CEILINGS',
    type: '`field=value,…`',
    default: 'the built-in ceilings',
    who: 'operator',
    doc: 'The most a run may ask for, e.g. `budgets.maxUsd=50` (`--run-ceilings`; read by policy/run-ceilings.ts).',
    parse: raw,
  }),
  setupHostNetwork: setting({
    name: 'KILN_SETUP_HOST_NETWORK',
    type: '`allow`',
    default: 'refused',
    who: 'operator',
    doc: "Let setup commands run on the host's network where no isolated one can be made (they can then reach its loopback).",
    parse: is('allow'),
  }),
  setupAllowNets: setting({
    name: 'KILN_SETUP_ALLOW_NETS',
    type: 'IPv4 CIDRs, `,`-separated',
    default: 'none',
    who: 'operator',
    doc: 'Private networks setup commands may reach (a registry mirror), besides the internet.',
    parse: cidrs,
  }),
  mcpAllowNets: setting({
    name: 'KILN_MCP_ALLOW_NETS',
    type: 'IPv4 CIDRs, `,`-separated',
    default: 'none',
    who: 'operator',
    doc: "Private, loopback or the host's own addresses that the hosts an MCP server's `network.hosts` lists may resolve to (docs/mcp.md).",
    parse: cidrs,
  }),
  keepReaderSandbox: setting({
    name: 'KILN_KEEP_READER_SANDBOX',
    type: '`0`',
    default: 'kept',
    who: 'operator',
    doc: '`0` gives every read-only command a sandbox of its own instead of one kept per worktree.',
    parse: raw.transform((v) => v !== '0'),
  }),
  serveAllowScripted: setting({
    name: 'KILN_SERVE_ALLOW_SCRIPTED',
    type: '`1`',
    default: 'refused',
    who: 'operator',
    doc: '`kiln serve` accepts `scripted:FILE` models, which read a file on its host: for development (`--allow-scripted-model`).',
    parse: is('1'),
  }),

  // the model
  model: setting({
    name: 'KILN_MODEL',
    type: 'model spec',
    default: "the repo's `.kiln/config` `model`, else the built-in default model",
    who: 'user',
    doc: "The model `kiln run` asks for when `--model` is not given; it comes before the repo's `.kiln/config` `model`.",
    parse: text,
  }),
  reviewModel: setting({
    name: 'KILN_REVIEW_MODEL',
    type: 'model spec',
    default: "the repo's `.kiln/config` `reviewModel`, else the run's model",
    who: 'user',
    doc: "The model of the independent review (`--review on` or `required`) when `--review-model` is not given; it comes before the repo's `.kiln/config` `reviewModel`.",
    parse: text,
  }),
  modelFirstByteMs: setting({
    name: 'KILN_MODEL_FIRST_BYTE_MS',
    type: 'ms',
    default: '60000',
    who: 'operator',
    doc: 'A model call that sends nothing for this long is given up and tried again.',
    parse: count(),
  }),
  modelIdleMs: setting({
    name: 'KILN_MODEL_IDLE_MS',
    type: 'ms',
    default: '90000',
    who: 'operator',
    doc: 'A model stream silent for this long is given up and tried again.',
    parse: count(),
  }),
  openaiCompatibleUrls: setting({
    name: 'KILN_OPENAI_COMPATIBLE_URLS',
    type: 'URLs, `,`-separated',
    default: 'none',
    who: 'operator',
    doc: 'Comma-separated base URLs of OpenAI-compatible servers this worker may call for `openai-compatible@URL:MODEL` models (e.g. `http://localhost:11434/v1`); a run naming any other URL is refused, so a run request cannot point the worker, or `OPENAI_COMPATIBLE_API_KEY`, at a host of its choosing.',
    parse: raw.transform((v) => list(v, ',').map((u) => u.replace(/\/+$/, ''))),
  }),
  scriptedWire: setting({
    name: 'KILN_SCRIPTED_WIRE',
    type: '`openai`',
    default: 'the Messages API',
    who: 'operator, user',
    doc: "`openai`: a scripted model is called over OpenAI's Chat Completions, through the OpenAI provider, instead of Anthropic's Messages API; the script and the run are the same.",
    parse: raw.transform((v) => (v?.trim() === 'openai' ? ('openai' as const) : undefined)),
  }),
  turnsAheadMs: setting({
    name: 'KILN_TURNS_AHEAD_MS',
    type: 'ms',
    default: '1000',
    who: 'operator',
    doc: 'How long the turn activity runs turns on its own before it reports back; `0` sends every turn back through the server.',
    parse: count({ zero: true }),
  }),
  outputLogMaxBytes: setting({
    name: 'KILN_OUTPUT_LOG_MAX_BYTES',
    type: 'bytes',
    default: '67108864 (64 MB)',
    who: 'operator',
    doc: "The most of one command's output kept in the run's `outputs/<id>.log`.",
    parse: count(),
  }),

  // keys and tokens
  approvalKey: setting({
    name: 'KILN_APPROVAL_KEY',
    type: 'hex or base64, ≥ 32 bytes',
    default: '`$KILN_HOME/approval.key`',
    who: 'operator',
    doc: 'The key that signs and checks approvals; workers and the server must share it.',
    parse: text,
  }),
  codecKeysFile: setting({
    name: 'KILN_CODEC_KEYS_FILE',
    type: 'path',
    default: 'history not encrypted',
    who: 'operator, user',
    doc: 'A keyring file: history payloads are encrypted with its active key (docs/encryption.md). Every Kiln process of an installation needs the same.',
    parse: trimmed,
  }),
  codecKey: setting({
    name: 'KILN_CODEC_KEY',
    type: 'base64, 32 bytes',
    default: 'none',
    who: 'operator, user',
    doc: 'One codec key instead of a keyring file, named by `KILN_CODEC_KEY_ID`.',
    parse: trimmed,
  }),
  codecKeyId: setting({
    name: 'KILN_CODEC_KEY_ID',
    type: 'string',
    default: 'none',
    who: 'operator, user',
    doc: 'The name of `KILN_CODEC_KEY`, stored with every payload so rotation can find it.',
    parse: trimmed,
  }),
  codecServerToken: setting({
    name: 'KILN_CODEC_SERVER_TOKEN',
    type: 'string',
    default: 'a new random token',
    who: 'operator',
    doc: 'The bearer token `kiln codec-server` asks the Web UI for.',
    parse: trimmed,
  }),

  // the CLI
  debug: setting({
    name: 'KILN_DEBUG',
    type: 'any',
    default: 'off',
    who: 'user',
    doc: 'Any value: the CLI prints the stack of an error after its one line.',
    parse: raw.transform(Boolean),
  }),
  evalConcurrency: setting({
    name: 'KILN_EVAL_CONCURRENCY',
    type: 'count',
    default: '2',
    who: 'user',
    doc: '`kiln eval`: how many tasks run at once.',
    parse: number,
  }),

  // the bench
  benchBin: setting({
    name: 'KILN_BENCH_BIN',
    type: 'path',
    default: "this checkout's `bin/kiln.js`",
    who: 'bench',
    doc: "The `kiln` the side-by-side bench times, e.g. main's build for a before and after.",
    parse: raw,
  }),

  // tests only: read by testing-hooks.ts, nowhere else
  testCrashAt: setting({
    name: 'KILN_TEST_CRASH_AT',
    type: '`point[@key]`, `,`-separated',
    default: 'none',
    who: 'tests',
    doc: 'The worker kills itself (SIGKILL) the first time it reaches one of these points, so tests can crash it at a precise moment.',
    parse: raw.transform((v) => list(v, ',')),
  }),
  testCrashMarkers: setting({
    name: 'KILN_TEST_CRASH_MARKERS',
    type: 'path',
    default: '`./.kiln-crash-markers`',
    who: 'tests',
    doc: 'Where each crash point leaves a marker once it fired, so it fires once.',
    parse: raw,
  }),
} satisfies Record<string, Setting<unknown>>;

type Defs = typeof DEFS;
export type Settings = { readonly [K in keyof Defs]: z.output<Defs[K]['parse']> };

/** The table as data, in the order above: the README's "Settings" section lists exactly these. */
export const SETTINGS: readonly { key: string; name: string; type: string; default: string; who: Who; doc: string }[] = Object.entries(DEFS).map(
  ([key, d]) => ({ key, name: d.name, type: d.type, default: d.default, who: d.who, doc: d.doc }),
);

const NAMES = SETTINGS.map((s) => s.name);
const made = new WeakMap<NodeJS.ProcessEnv, { seen: string; settings: Settings }>();

/**
 * The settings an environment gives. The same environment with the same `KILN_*` values gets the
 * same object back, so each value is parsed once; tests (and the bench) set variables in
 * `process.env` between cases, and the next call sees the change without a reset to forget.
 */
export function settingsFrom(env: NodeJS.ProcessEnv): Settings {
  const values = NAMES.map((n) => env[n]);
  const seen = JSON.stringify(values);
  const had = made.get(env);
  if (had?.seen === seen) return had.settings;
  const settings = {} as Record<string, unknown>;
  Object.entries(DEFS).forEach(([key, d], i) => {
    let parsed: { value: unknown } | undefined;
    Object.defineProperty(settings, key, {
      enumerable: true,
      get: () => (parsed ??= { value: parse(d, values[i]) }).value,
    });
  });
  Object.freeze(settings);
  made.set(env, { seen, settings: settings as Settings });
  return settings as Settings;
}

function parse(d: Setting<unknown>, value: string | undefined): unknown {
  const r = d.parse.safeParse(value);
  if (!r.success) throw new SettingsError(`${d.name}: ${r.error.issues[0]!.message}`);
  return r.data;
}

/** This process's settings. */
export function settings(): Settings {
  return settingsFrom(process.env);
}
