/**
 * A worker setting given as a number in its environment (KILN_OUTPUT_LOG_MAX_BYTES,
 * KILN_MODEL_IDLE_MS, …). Unset, blank, negative or not a number: the default. Zero only where
 * the setting says what zero means (`zero: true`); elsewhere it is the default too.
 */
export function envNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, o: { zero?: boolean } = {}): number {
  const raw = env[name]?.trim();
  const n = raw ? Number(raw) : NaN;
  return Number.isFinite(n) && (n > 0 || (o.zero === true && n === 0)) ? n : fallback;
}
