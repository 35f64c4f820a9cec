export type WorkerRequest = { seq: number } & (
  | { op: 'grow'; target: number }
  | { op: 'probe-reset' }
  | { op: 'probe-count' }
  | { op: 'arm'; eventId: string; status: string }
  | { op: 'collect' }
  | { op: 'close' }
);

export type WorkerReply =
  | { event: 'ready' | 'probed' | 'done' }
  | {
      seq: number;
      /** Subscribers this process holds, and how many of them failed (connection refused, closed unexpectedly). */
      size: number;
      failures: number;
      probed?: number;
      /** collect: when each subscriber that got the round's event got it (monotonic ms), and what went wrong. */
      times?: number[];
      duplicates?: number;
      wrong?: number;
      /** collect: event-loop utilisation from this process's first delivery of the round to its last. */
      elu?: number;
      error?: string;
    };

export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;
