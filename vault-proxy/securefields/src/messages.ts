// The messages between the merchant's page (the loader) and the field
// iframes. Every message carries the form's random channel id and is sent
// with an explicit target origin; each side accepts only messages from the
// origin and window it expects on its channel. Only metadata crosses:
// never a card number or a security code.

import type { Scheme } from "./card";
import type { Styles } from "./styles";

export const VERSION = "2.7.1";
export const TAG = "payorch-secure-fields";

export type FieldKind = "number" | "expiryDate" | "securityCode";

export interface FieldOptions {
  placeholder?: string;
  styles?: Styles;
  title?: string;
  /** Focus this field once it is ready (2.7.1). */
  autoFocus?: boolean;
  /** Show masked characters instead of digits (2.7.1). */
  masked?: boolean;
  /** With masked on the number: keep the last four digits visible (2.7.1). */
  showLastFour?: boolean;
  /** An icon of the detected scheme inside the number field (2.7.1). */
  schemeIcon?: boolean;
}

/** Parent → field. */
export type ToField =
  | { type: "init"; options: FieldOptions; paymentMethodId?: string }
  | { type: "submit" }
  | { type: "focus" }
  | { type: "reset" }
  | { type: "setMasked"; masked: boolean }
  | { type: "scheme"; scheme: Scheme | null };

export interface FieldMeta {
  empty: boolean;
  complete: boolean;
  valid: boolean;
  /** The number field only. */
  scheme?: Scheme | null;
  bin?: string | null;
  last4?: string | null;
}

export interface VaultedCard {
  scheme?: string;
  bin?: string;
  last4?: string;
  expirationDate?: string;
}

export interface VaultFailure {
  code: string;
  message: string;
  status?: number;
}

/** Field → parent. */
export type FromField =
  | { type: "loaded" }
  | { type: "ready" }
  | { type: "change"; meta: FieldMeta }
  | { type: "complete" }
  | { type: "vaulted"; card: VaultedCard }
  | { type: "failed"; error: VaultFailure };

export type Envelope<T> = T & { tag: typeof TAG; channel: string; field: FieldKind };

export function isEnvelope(data: unknown, channel: string): data is Envelope<{ type: string }> {
  if (typeof data !== "object" || data === null) return false;
  const d = data as Record<string, unknown>;
  return d.tag === TAG && d.channel === channel && typeof d.type === "string";
}

/** Between the fields of one form (same origin: vault-proxy's), by BroadcastChannel. */
export type Sibling =
  | { type: "collect"; id: string }
  | { type: "value"; id: string; field: FieldKind; value: string; complete: boolean };
