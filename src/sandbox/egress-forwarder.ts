/*
 * Inside the sandbox of an MCP server that lists hosts: a small Node program listens on
 * 127.0.0.1:EGRESS_PORT (the namespace's own loopback), carries each connection to the worker's
 * proxy over the unix socket bound in (egress-proxy.ts), and runs the server as its child with the
 * same stdio. The server is told the proxy by the usual variables. Nothing here is a wall: the
 * server could reach the socket itself; the proxy on the worker's side decides.
 */
import { shellJoin } from './shell-quote.js';

/** The proxy's port on the sandbox's loopback; the namespace is the server's alone, so any port will do. */
export const EGRESS_PORT = 3128;

/** argv: the socket, the port, then the server's program and arguments. */
const FORWARDER = `
const net = require('node:net');
const { spawn } = require('node:child_process');
const [sock, port, ...argv] = process.argv.slice(1);
const fwd = net.createServer({ allowHalfOpen: true }, (c) => {
  const u = net.connect({ path: sock, allowHalfOpen: true });
  const end = () => { c.destroy(); u.destroy(); };
  for (const s of [c, u]) { s.on('error', end); s.on('close', end); }
  c.pipe(u);
  u.pipe(c);
});
fwd.on('error', (e) => { process.stderr.write('kiln egress forwarder: ' + e.message + '\\n'); process.exit(125); });
fwd.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' });
  child.on('error', (e) => { process.stderr.write('could not start ' + argv[0] + ': ' + e.message + '\\n'); process.exit(127); });
  child.on('exit', (code, sig) => process.exit(code ?? 128 + (require('node:os').constants.signals[sig] ?? 0)));
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => child.kill(s));
});
`;

/** The shell command that starts the forwarder, which starts the server. */
export function forwardedCommand(argv: readonly string[], socketPath: string): string {
  return `exec ${shellJoin([process.execPath, '-e', FORWARDER, socketPath, String(EGRESS_PORT), ...argv])}`;
}

/** The variables that point clients at the forwarder; no host is exempt from it (there is no other way out). */
export function egressEnv(): Record<string, string> {
  const url = `http://127.0.0.1:${EGRESS_PORT}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    ALL_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    all_proxy: url,
    NO_PROXY: '',
    no_proxy: '',
    // Node's own fetch and http follow the variables with this (Node 24 and later)
    NODE_USE_ENV_PROXY: '1',
  };
}
