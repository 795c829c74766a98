// Small value types shared by the domain modules. Timestamps are epoch
// milliseconds everywhere (the clock is injected; the API renders ISO text).

/** Milliseconds since the Unix epoch (UTC). */
export type EpochMs = number;

/** A JSON-serialisable value, as stored in the JSON columns of the store. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** A template layer addressed by id and canonical checksum (docs/layer-checksum.md). */
export interface LayerRef {
  id: string;
  checksum: string;
}

export interface Resources {
  memoryMb: number;
  /** Fractional CPUs; absent means no CPU limit (a zero quota confuses Java). */
  cpus?: number;
}

/** Operator-set maintenance flag with the message shown to refused users. */
export interface MaintenanceMode {
  enabled: boolean;
  message: string;
  since: EpochMs;
}
