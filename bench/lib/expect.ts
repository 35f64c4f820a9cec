function sameJson(expected: unknown, actual: unknown): boolean {
  if (typeof expected === 'number' && typeof actual === 'number') {
    return Math.abs(expected - actual) <= 1e-9 * Math.max(1, Math.abs(expected));
  }
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((item, i) => sameJson(item, actual[i]));
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    const e = expected as Record<string, unknown>;
    const a = actual as Record<string, unknown>;
    const keys = Object.keys(e);
    return keys.length === Object.keys(a).length && keys.every((key) => key in a && sameJson(e[key], a[key]));
  }
  return expected === actual;
}

export class BodyCheck {
  private readonly confirmed: string[] = [];
  private exactBytes: string | undefined;

  /** @param expected the answer as a value; key order and number formatting are free. */
  constructor(readonly expected: unknown) {}

  /** Exact bytes: no JSON parsing at all (for the pre-serialised upstream). */
  static exact(bytes: string): BodyCheck {
    const check = new BodyCheck(JSON.parse(bytes));
    check.confirmed.push(bytes);
    check.exactBytes = bytes;
    return check;
  }

  /** A check rebuilt from toWire's JSON in another process (S8's load generator child). */
  static fromWire(wire: ReturnType<BodyCheck['toWire']>): BodyCheck {
    return wire.exact === undefined ? new BodyCheck(wire.expected) : BodyCheck.exact(wire.exact);
  }

  toWire(): { expected: unknown; exact?: string } {
    return this.exactBytes === undefined ? { expected: this.expected } : { expected: this.expected, exact: this.exactBytes };
  }

  matches(body: string): boolean {
    for (const known of this.confirmed) if (known === body) return true;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return false;
    }
    if (!sameJson(this.expected, parsed)) return false;
    if (this.confirmed.length < 4) this.confirmed.push(body);
    return true;
  }
}
