// Card number, expiry and security code rules the fields check as the
// buyer types. vault-proxy checks the card again when it is sent; these
// only drive the form's state and the metadata the merchant's page sees.

export type Scheme =
  | "visa" | "mastercard" | "amex" | "discover" | "diners" | "jcb" | "unionpay" | "maestro";

interface SchemeRule {
  scheme: Scheme;
  prefixes: Array<[number, number]>; // inclusive ranges over the leading digits
  lengths: number[];
  codeLength: number;
  gaps: number[]; // where the display puts spaces
}

const RULES: SchemeRule[] = [
  { scheme: "amex", prefixes: [[34, 34], [37, 37]], lengths: [15], codeLength: 4, gaps: [4, 10] },
  { scheme: "diners", prefixes: [[300, 305], [36, 36], [38, 39]], lengths: [14, 16, 19], codeLength: 3, gaps: [4, 10] },
  { scheme: "jcb", prefixes: [[3528, 3589]], lengths: [16, 17, 18, 19], codeLength: 3, gaps: [4, 8, 12] },
  { scheme: "discover", prefixes: [[6011, 6011], [644, 649], [65, 65]], lengths: [16, 19], codeLength: 3, gaps: [4, 8, 12] },
  { scheme: "unionpay", prefixes: [[62, 62]], lengths: [16, 17, 18, 19], codeLength: 3, gaps: [4, 8, 12] },
  { scheme: "mastercard", prefixes: [[51, 55], [2221, 2720]], lengths: [16], codeLength: 3, gaps: [4, 8, 12] },
  { scheme: "maestro", prefixes: [[50, 50], [56, 58], [63, 63], [67, 67]], lengths: [12, 13, 14, 15, 16, 17, 18, 19], codeLength: 3, gaps: [4, 8, 12] },
  { scheme: "visa", prefixes: [[4, 4]], lengths: [13, 16, 19], codeLength: 3, gaps: [4, 8, 12] },
];

/** digitsOf keeps the digits of s: a pasted "4111 1111-1111 1111" is a number. */
export function digitsOf(s: string): string {
  return s.replace(/\D+/g, "");
}

function ruleFor(digits: string): SchemeRule | undefined {
  for (const r of RULES) {
    for (const [lo, hi] of r.prefixes) {
      const n = String(lo).length;
      if (digits.length < n) continue;
      const p = Number(digits.slice(0, n));
      if (p >= lo && p <= hi) return r;
    }
  }
  return undefined;
}

/** schemeOf is the scheme the leading digits name, or null. */
export function schemeOf(digits: string): Scheme | null {
  return ruleFor(digits)?.scheme ?? null;
}

export function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return digits.length > 0 && sum % 10 === 0;
}

export const MAX_NUMBER_LENGTH = 19;

export interface NumberState {
  empty: boolean;
  complete: boolean; // as long as its scheme's numbers are
  valid: boolean; // complete and passing the check digit; or, while typing, not yet wrong
  scheme: Scheme | null;
}

export function numberState(digits: string): NumberState {
  const rule = ruleFor(digits);
  const lengths = rule ? rule.lengths : [16];
  const max = Math.max(...lengths);
  const complete = lengths.includes(digits.length) && luhn(digits) && (digits.length === max || rule !== undefined);
  const tooLong = digits.length > max;
  const wrong = tooLong || (digits.length >= max && !luhn(digits));
  return { empty: digits.length === 0, complete, valid: complete || (!wrong && digits.length > 0), scheme: rule?.scheme ?? null };
}

/** The BIN the merchant's page may see: 8 digits of a complete number of 16 or more, else 6. */
export function binOf(digits: string, complete: boolean): string | null {
  if (digits.length < 6) return null;
  return complete && digits.length >= 16 ? digits.slice(0, 8) : digits.slice(0, 6);
}

export function formatNumber(digits: string): string {
  const gaps = ruleFor(digits)?.gaps ?? [4, 8, 12];
  let out = "";
  for (let i = 0; i < digits.length; i++) {
    if (gaps.includes(i)) out += " ";
    out += digits[i];
  }
  return out;
}

export function codeLengthFor(scheme: Scheme | null): number {
  return RULES.find((r) => r.scheme === scheme)?.codeLength ?? 3;
}

/**
 * normalizeExpiry takes what a buyer types or the browser autofills
 * ("12/30", "1230", "12 / 2030", "122030") to MM/YY digits.
 */
export function expiryDigits(raw: string): string {
  const trimmed = raw.trim();
  const m = /^(\d{1,2})\s*[/\-.]\s*(\d{2}|\d{4})$/.exec(trimmed);
  if (m) {
    const mm = m[1].padStart(2, "0");
    const yy = m[2].length === 4 ? m[2].slice(2) : m[2];
    return mm + yy;
  }
  let d = digitsOf(trimmed);
  if (d.length === 6) d = d.slice(0, 2) + d.slice(4); // MMYYYY
  if (d.length === 1 && d > "1") d = "0" + d; // "4" is April
  return d.slice(0, 4);
}

export function formatExpiry(digits: string): string {
  return digits.length <= 2 ? digits : digits.slice(0, 2) + "/" + digits.slice(2);
}

export interface FieldState {
  empty: boolean;
  complete: boolean;
  valid: boolean;
}

export function expiryState(digits: string, now: Date): FieldState {
  const empty = digits.length === 0;
  if (digits.length < 4) {
    const month = Number(digits.slice(0, 2));
    const badMonth = digits.length >= 2 && (month < 1 || month > 12);
    return { empty, complete: false, valid: !empty && !badMonth };
  }
  const month = Number(digits.slice(0, 2));
  const year = 2000 + Number(digits.slice(2, 4));
  const thisMonth = now.getFullYear() * 12 + now.getMonth();
  const valid = month >= 1 && month <= 12 && year * 12 + (month - 1) >= thisMonth && year <= now.getFullYear() + 20;
  return { empty, complete: valid, valid };
}

export function codeState(digits: string, scheme: Scheme | null): FieldState {
  const want = codeLengthFor(scheme);
  const empty = digits.length === 0;
  const complete = digits.length === want || (scheme === null && digits.length === 4);
  return { empty, complete, valid: complete || (!empty && digits.length < want) };
}
