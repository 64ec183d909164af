import picomatch from 'picomatch';
import type { PolicyConfig } from './config.js';

/**
 * Files whose contents are credentials. Never read, never written, never searched.
 * `.env.example`, `.env.sample`, `.env.template` and `.env.dist` are not on the
 * list: they are committed templates that tell the agent which variables exist.
 */
export const BUILTIN_SENSITIVE = [
  '**/.env',
  '**/.env.*',
  '**/.envrc',
  '**/id_rsa',
  '**/id_dsa',
  '**/id_ecdsa',
  '**/id_ed25519',
  '**/id_rsa_*',
  '**/id_ed25519_*',
  '**/*.pem',
  '**/*.key',
  '**/*.p12',
  '**/*.pfx',
  '**/*.jks',
  '**/*.keystore',
  '**/credentials.json',
  '**/service-account*.json',
  '**/kubeconfig',
  '**/.kube/**',
  '**/.npmrc',
  '**/.yarnrc',
  '**/.pypirc',
  '**/.netrc',
  '**/_netrc',
  '**/.pgpass',
  '**/.my.cnf',
  '**/.htpasswd',
  '**/.aws/**',
  '**/.ssh/**',
  '**/.gnupg/**',
  '**/.docker/config.json',
  '**/.git-credentials',
  '**/*.tfstate',
  '**/*.tfstate.*',
  '.git/config',
];

const SENSITIVE_TEMPLATES = ['**/.env.example', '**/.env.sample', '**/.env.template', '**/.env.dist', '**/*.pub'];

/**
 * Files that configure what runs on a developer's machine or in CI. The agent
 * may propose changes, but a person approves each one.
 */
export const EXECUTABLE_CONFIG = [
  '.git/hooks/**',
  '.husky/**',
  '.github/workflows/**',
  '.github/actions/**',
  '.gitlab-ci.yml',
  '.circleci/**',
  '.vscode/**',
  '.idea/**',
  '.devcontainer/**',
  '.mcp.json',
  '**/.mcp.json',
  '.claude/**',
  '.cursor/**',
  '.cursorrules',
  '**/CLAUDE.md',
  '**/AGENTS.md',
  '.kiln/**',
  '.pre-commit-config.yaml',
  '.gitattributes',
  '.gitmodules',
  '.yarnrc.yml',
  '.envrc',
];

type Matcher = (p: string) => boolean;
const cache = new Map<string, Matcher>();

function matcher(globs: readonly string[], nocase = false): Matcher {
  const key = `${nocase}\0${globs.join('\0')}`;
  let m = cache.get(key);
  if (!m) {
    m = globs.length === 0 ? () => false : picomatch([...globs], { dot: true, nocase });
    cache.set(key, m);
  }
  return m;
}

/** `p` relative to the worktree (or absolute outside it), '/'-separated. */
function norm(p: string): string {
  return p
    .replace(/\\/g, '/')
    .replace(/^\/+/, '')
    .replace(/^(\.\/)+/, '');
}

export function matchesAny(p: string, globs: readonly string[]): boolean {
  return matcher(globs)(norm(p));
}

/**
 * True when `rel` (or an absolute path outside the worktree) holds credentials:
 * the built-in list plus `config.sensitive`, minus `config.allowSensitive`.
 * The tool layer uses this to drop search and list results from such files.
 */
export function isSensitivePath(rel: string, config?: Pick<PolicyConfig, 'sensitive' | 'allowSensitive'>): boolean {
  const p = norm(rel);
  if (!p) return false;
  if (config && matcher(config.allowSensitive)(p)) return false;
  if (matcher(SENSITIVE_TEMPLATES, true)(p)) return false;
  return matcher(BUILTIN_SENSITIVE, true)(p) || matcher(config?.sensitive ?? [], true)(p);
}

export function isExecutableConfig(rel: string): boolean {
  return matcher(EXECUTABLE_CONFIG)(norm(rel));
}

/**
 * Whether a glob is aimed at sensitive files (`**\/.env*`, `*.pem`, `.ssh/**`),
 * judged by trying the shortest and a typical path the glob would match.
 */
export function globTargetsSensitive(glob: string, config?: Pick<PolicyConfig, 'sensitive' | 'allowSensitive'>): boolean {
  const bare = glob.replace(/\{([^},]*)[^}]*\}/g, '$1');
  const candidates = [
    bare.replace(/\*\*\/?/g, '').replace(/[*?]/g, ''),
    bare.replace(/\*\*\/?/g, '').replace(/[*?]/g, 'x'),
    bare
      .replace(/\*\*\/?/g, 'x/')
      .replace(/\*/g, 'x')
      .replace(/\?/g, 'x'),
    bare
      .replace(/\*\*\/?/g, '')
      .replace(/\*/g, 'x')
      .replace(/\[[^\]]*\]/g, 'x'),
  ];
  // `{a,b}` alternatives each on their own
  for (const alt of glob.matchAll(/\{([^}]*)\}/g)) {
    for (const part of alt[1]!.split(','))
      candidates.push(
        glob
          .replace(alt[0], part)
          .replace(/\*\*\/?/g, '')
          .replace(/[*?]/g, ''),
      );
  }
  return candidates.some((c) => c.replace(/\/+$/, '') !== '' && isSensitivePath(c.replace(/\/+$/, ''), config));
}
