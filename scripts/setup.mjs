#!/usr/bin/env node
// First step on a fresh machine: npm packages, the TypeScript build, then `kiln setup`
// (Temporal CLI built once into a cache outside the repo, bubblewrap). Each step is skipped
// when it is already done.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`kiln needs Node.js 20.19 or newer (this is ${process.versions.node})`);
  process.exit(2);
}
if (!existsSync(join(root, 'node_modules', '.package-lock.json'))) run('npm', ['ci', '--no-audit', '--no-fund']);
run('npm', ['run', '--silent', 'build']);
run(process.execPath, [join(root, 'bin', 'kiln.js'), 'setup']);
