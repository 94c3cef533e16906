/**
 * The brake on drift correction. Another writer that keeps setting a field
 * the controller also sets (an autoscaler on `spec.replicas`, a GitOps tool
 * applying another hash) would otherwise meet a correction, and an Event,
 * every time it writes: an endless loop that hides the real problem. A field
 * corrected `threshold` times within `windowMs` is a fight: it is left alone
 * for a hold that doubles with each fight (up to `maxHoldMs`), and reported.
 */
export interface FieldFightPolicy {
  /** Corrections of one field within the window that make a fight. @default 3 */
  readonly threshold: number;
  /** @default 10 minutes */
  readonly windowMs: number;
  /** The first hold; each further fight on the field doubles it. @default 5 minutes */
  readonly holdMs: number;
  /** @default 1 hour */
  readonly maxHoldMs: number;
}

export const DEFAULT_FIELD_FIGHT_POLICY: FieldFightPolicy = { threshold: 3, windowMs: 10 * 60_000, holdMs: 5 * 60_000, maxHoldMs: 60 * 60_000 };

interface FieldRecord {
  corrections: number[];
  heldUntil: number;
  fights: number;
}

/** The fight records of one object's fields, by field path. */
export class FieldFights {
  /** Created on the first correction: almost every object never has one, and an empty Map per object adds up over a fleet. */
  private fields?: Map<string, FieldRecord>;

  constructor(private readonly policy: FieldFightPolicy = DEFAULT_FIELD_FIGHT_POLICY) {}

  /** When the hold on a field ends (ms since the epoch), if it is held now. */
  heldUntil(path: string, now: number): number | undefined {
    const record = this.fields?.get(path);
    return record && record.heldUntil > now ? record.heldUntil : undefined;
  }

  /** Records a correction; returns the end of the hold when this correction makes a fight. */
  corrected(path: string, now: number): number | undefined {
    this.fields ??= new Map();
    let record = this.fields.get(path);
    if (!record) this.fields.set(path, (record = { corrections: [], heldUntil: 0, fights: 0 }));
    record.corrections = record.corrections.filter((t) => now - t < this.policy.windowMs);
    record.corrections.push(now);
    if (record.corrections.length < this.policy.threshold) return undefined;
    record.heldUntil = now + Math.min(this.policy.maxHoldMs, this.policy.holdMs * 2 ** record.fights);
    record.fights++;
    record.corrections = [];
    return record.heldUntil;
  }

  /** Drops what no longer matters: no hold, no recent correction, and no fight within the longest hold. */
  prune(now: number): void {
    if (!this.fields) return;
    for (const [path, record] of this.fields) {
      const recent = record.corrections.some((t) => now - t < this.policy.windowMs);
      if (!recent && now - record.heldUntil > this.policy.maxHoldMs) this.fields.delete(path);
    }
    if (this.fields.size === 0) this.fields = undefined;
  }

  get size(): number {
    return this.fields?.size ?? 0;
  }
}
