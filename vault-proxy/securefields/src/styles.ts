// The styles a merchant may give its fields: a whitelisted set of CSS
// properties, values without url(), expressions or anything that could
// leave the declaration, and fonts from a safe list (no web fonts: the
// field page loads nothing from elsewhere).

export type StyleDecl = Record<string, string>;

export interface Styles {
  base?: StyleDecl;
  focus?: StyleDecl;
  invalid?: StyleDecl;
  complete?: StyleDecl;
  placeholder?: StyleDecl;
}

export const ALLOWED_PROPERTIES: ReadonlySet<string> = new Set([
  "color", "background-color", "caret-color", "font-family", "font-size", "font-style", "font-variant", "font-weight",
  "letter-spacing", "line-height", "padding", "padding-top", "padding-right", "padding-bottom", "padding-left",
  "text-align", "text-decoration", "text-shadow", "text-transform", "opacity",
]);

export const SAFE_FONTS: ReadonlySet<string> = new Set([
  "system-ui", "-apple-system", "blinkmacsystemfont", "segoe ui", "roboto", "helvetica neue", "helvetica", "arial",
  "verdana", "tahoma", "trebuchet ms", "georgia", "times new roman", "times", "courier new", "courier",
  "sans-serif", "serif", "monospace", "ui-sans-serif", "ui-serif", "ui-monospace",
]);

const BAD_VALUE = /url\s*\(|expression\s*\(|image\s*\(|image-set|element\s*\(|javascript:|[\\;{}<>@]|\/\*|!important/i;

function kebab(k: string): string {
  return k.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
}

function safeFontFamily(v: string): boolean {
  return v.split(",").every((f) => SAFE_FONTS.has(f.trim().replace(/^["']|["']$/g, "").toLowerCase()));
}

/** sanitizeDecl keeps the allowed, safe declarations of d; rejected lists what it dropped. */
export function sanitizeDecl(d: unknown, rejected: string[] = []): StyleDecl {
  const out: StyleDecl = {};
  if (typeof d !== "object" || d === null) return out;
  for (const [k, v] of Object.entries(d as Record<string, unknown>)) {
    const prop = kebab(k);
    if (!ALLOWED_PROPERTIES.has(prop) || typeof v !== "string" || v.length > 200 || BAD_VALUE.test(v) ||
      (prop === "font-family" && !safeFontFamily(v))) {
      rejected.push(k);
      continue;
    }
    out[prop] = v;
  }
  return out;
}

export function sanitizeStyles(s: unknown, rejected: string[] = []): Styles {
  const out: Styles = {};
  if (typeof s !== "object" || s === null) return out;
  for (const state of ["base", "focus", "invalid", "complete", "placeholder"] as const) {
    const d = (s as Record<string, unknown>)[state];
    if (d !== undefined) out[state] = sanitizeDecl(d, rejected);
  }
  return out;
}
