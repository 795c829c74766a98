// How the store keeps secret values at rest without ever holding a key: the
// orchestrator installs a codec (server/secrets/secret-box.ts) and the store
// seals every secret column through it on write and opens it on read. A
// value written before encryption existed (plain JSON) is still read, and
// sealed by `secrets.sealPlaintext` at the next start.

/** Seals and opens one secret value; the store's only view of the key. */
export interface SecretCodec {
  /** The fingerprint of the key values are sealed under (public: tells keys apart, reveals neither). */
  readonly fingerprint: string;
  /** `plaintext` sealed and bound to `context` (the row and field it belongs to). */
  seal(plaintext: string, context: string): string;
  /** The plaintext of a sealed value; refuses one sealed under another key, for another context, or altered. */
  open(sealed: string, context: string): string;
}

/** The store's codec slot, shared by the store and the transactions it opens. */
export interface SecretSlot {
  codec: SecretCodec | undefined;
}

/** What a secret value is bound to: its table, row and field (a sealed value moved to another row does not open). */
export function secretContext(table: string, id: string, field: string): string {
  return `${table}/${id}/${field}`;
}

/** True for a value stored before encryption: plain JSON (a sealed value never starts with `{`). */
export function isPlaintextJson(stored: string): boolean {
  return stored.startsWith('{');
}
