/**
 * Kiln's search attributes on whatever server a worker connects to (`kiln dev` registers them
 * by flag; a cluster or Temporal Cloud namespace needs the operator API). Idempotent: only the
 * missing ones are added, so every worker start may call it.
 */
import type { temporal } from '@temporalio/proto';
import { KilnError } from '../shared/errors.js';
import { KILN_SEARCH_ATTRIBUTE_KEYS } from '../shared/search-attributes.js';

/**
 * This client cannot register search attributes on this server; runs work, fleet queries wait
 * for an admin (the message says how). The worker says it and starts.
 */
export class SearchAttributesNotRegisteredError extends KilnError {
  override name = 'SearchAttributesNotRegisteredError';
  readonly retryable = false;
}

/** The client may not register search attributes: an admin must, once. */
export class SearchAttributePermissionError extends SearchAttributesNotRegisteredError {
  override name = 'SearchAttributePermissionError';
}

/** The server (or a proxy in front of it) does not serve the operator API at all. */
export class OperatorApiUnavailableError extends SearchAttributesNotRegisteredError {
  override name = 'OperatorApiUnavailableError';
}

export interface RegisterResult {
  added: string[];
  present: string[];
}

/** temporal.api.enums.v1.IndexedValueType for the types Kiln uses (the proto package is CommonJS: no named import at run time) */
const INDEXED_VALUE_TYPE: Record<(typeof KILN_SEARCH_ATTRIBUTE_KEYS)[number]['type'], temporal.api.enums.v1.IndexedValueType> = {
  KEYWORD: 2,
  DOUBLE: 4,
  DATETIME: 6,
  KEYWORD_LIST: 7,
};

/** gRPC status codes (google.rpc.Code) that mean "not allowed" */
const PERMISSION_DENIED = 7;
const UNAUTHENTICATED = 16;
/** what a server or proxy answers for a service it does not serve (Temporal Cloud's namespace endpoints, some gateways) */
const UNIMPLEMENTED = 12;

function isDenied(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === PERMISSION_DENIED || code === UNAUTHENTICATED;
}

function isUnimplemented(err: unknown): boolean {
  return (err as { code?: unknown })?.code === UNIMPLEMENTED;
}

export function adminCommands(namespace: string, names: readonly string[]): string {
  const types = new Map(KILN_SEARCH_ATTRIBUTE_KEYS.map((k) => [k.name, k.type]));
  return names.map((n) => `temporal operator search-attribute create --namespace ${namespace} --name ${n} --type ${cliType(types.get(n)!)}`).join('; ');
}

function cliType(t: string): string {
  return { KEYWORD: 'Keyword', KEYWORD_LIST: 'KeywordList', DOUBLE: 'Double', DATETIME: 'Datetime' }[t] ?? t;
}

/** Both the client's Connection and the worker's NativeConnection have one. */
interface HasOperatorService {
  operatorService: Pick<temporal.api.operatorservice.v1.OperatorService, 'listSearchAttributes' | 'addSearchAttributes'>;
}

export async function registerSearchAttributes(connection: HasOperatorService, namespace: string): Promise<RegisterResult> {
  const denied = (missing: readonly string[]) =>
    new SearchAttributePermissionError(
      `this client may not register Kiln's search attributes in namespace ${namespace} (permission denied): runs work, but fleet queries (kiln list filters) need them — ask an admin to run: ${adminCommands(namespace, missing)}`,
    );
  const unavailable = (missing: readonly string[]) =>
    new OperatorApiUnavailableError(
      `this server does not offer the operator API (unimplemented), so Kiln's search attributes cannot be registered from here in namespace ${namespace}: runs work, but fleet queries (kiln list filters) need them — an admin adds them where the server is administered (Temporal Cloud: \`tcld namespace search-attributes add\` or the web console), or with: ${adminCommands(namespace, missing)}`,
    );
  const refusal = (err: unknown, missing: readonly string[]) => (isDenied(err) ? denied(missing) : isUnimplemented(err) ? unavailable(missing) : undefined);
  const list = async () => {
    try {
      return (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
    } catch (err) {
      throw (
        refusal(
          err,
          KILN_SEARCH_ATTRIBUTE_KEYS.map((k) => k.name),
        ) ?? err
      );
    }
  };
  const existing = await list();
  const missing = KILN_SEARCH_ATTRIBUTE_KEYS.filter((k) => !(k.name in existing));
  const present = KILN_SEARCH_ATTRIBUTE_KEYS.filter((k) => k.name in existing).map((k) => k.name);
  if (!missing.length) return { added: [], present };
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((k) => [k.name, INDEXED_VALUE_TYPE[k.type]])),
    });
  } catch (err) {
    const refused = refusal(
      err,
      missing.map((k) => k.name),
    );
    if (refused) throw refused;
    // another worker may have added them between our list and our add: that is the goal reached
    const now = await list();
    if (missing.some((k) => !(k.name in now))) throw err;
  }
  return { added: missing.map((k) => k.name), present };
}
