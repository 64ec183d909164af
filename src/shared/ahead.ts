/**
 * A promise started before the code that awaits it is reached (reads issued together instead of
 * one after another). Its rejection is seen where it is awaited; one never awaited, because an
 * earlier step returned or threw, is not an unhandled rejection that would stop the process.
 */
export function ahead<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}
