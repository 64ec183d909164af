/** A value shared between callers, frozen all the way down: a caller that changes it throws instead of changing it for the others. */
export function deepFreeze<T>(v: T): T {
  if (v === null || typeof v !== 'object' || Object.isFrozen(v)) return v;
  Object.freeze(v);
  for (const c of Object.values(v)) deepFreeze(c);
  return v;
}
