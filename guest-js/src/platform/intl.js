// wrepl Intl: QuickJS-ng has no Intl object, so this file is a compact ECMA-402
// implementation in plain JavaScript, installed lazily the first time a script
// touches the global `Intl`. The completion value is a function the sandbox
// calls with (platform, load), both unused here; it returns { Intl }.
//
// Only en-US locale data is included. Every well-formed BCP 47 tag is accepted
// and resolves to "en-US" (other locales fall back to en-US, keeping supported
// -u- keywords); a malformed tag throws RangeError as V8 does. Output follows
// V8/ICU (node 20) for en-US: number rounding is exact decimal arithmetic on the
// shortest round-trip representation, date patterns come from a port of ICU's
// DateTimePatternGenerator and DateIntervalFormat over CLDR en data, and the
// Collator uses CLDR root (DUCET) weights for Latin text with a code-point
// approximation for other scripts. The only time zone is UTC (the default).
(function (platform, load) {
  "use strict";

  // ---- shared helpers -------------------------------------------------------
  const SLOTS = new WeakMap();
  function internal(obj, kind, method) {
    const s = obj !== null && (typeof obj === "object" || typeof obj === "function") ? SLOTS.get(obj) : undefined;
    if (!s || s.kind !== kind) throw new TypeError(`Method Intl.${kind}.prototype.${method} called on incompatible receiver ${typeof obj === "object" && obj ? "#<Object>" : String(typeof obj === "symbol" ? "Symbol()" : obj)}`);
    return s;
  }
  function coerceOptions(o, ctor) {
    if (o === undefined) return Object.create(null);
    if (o === null) throw new TypeError(ctor ? `Intl.${ctor} called on null or undefined` : "Cannot convert undefined or null to object");
    return Object(o);
  }
  function optionsObject(o) {
    if (o === undefined) return Object.create(null);
    if (o !== null && (typeof o === "object" || typeof o === "function")) return o;
    throw new TypeError("Options argument must be an object");
  }
  function getOption(opts, prop, type, values, fallback, ctor) {
    let v = opts[prop];
    if (v === undefined) return fallback;
    v = type === "boolean" ? Boolean(v) : String(v);
    if (values && !values.includes(v)) throw new RangeError(`Value ${v} out of range for Intl.${ctor} options property ${prop}`);
    return v;
  }
  function numberOption(v, min, max, fallback, prop) {
    if (v === undefined) return fallback;
    v = Number(v);
    if (!(v >= min && v <= max)) throw new RangeError(`${prop} value is out of range.`);
    return Math.floor(v);
  }
  const getNumberOption = (opts, prop, min, max, fallback) => numberOption(opts[prop], min, max, fallback, prop);
  const fill = (p, args) => p.replace(/\{(\d)\}/g, (_, i) => args[i]);
  const joinParts = parts => parts.map(p => p.value).join("");

  // ---- locales ---------------------------------------------------------------
  const LANG_ALIAS = { iw: "he", in: "id", ji: "yi", jw: "jv", mo: "ro" };
  const badLocale = () => new RangeError("Incorrect locale information provided");
  function canonicalizeU(parts) {
    const attrs = [], kws = new Map();
    let i = 0;
    while (i < parts.length && parts[i].length > 2) { if (!attrs.includes(parts[i])) attrs.push(parts[i]); i++; }
    while (i < parts.length) {
      const key = parts[i++], vals = [];
      if (!/^[a-z0-9][a-z]$/.test(key)) throw badLocale();
      while (i < parts.length && parts[i].length > 2) vals.push(parts[i++]);
      const v = vals.join("-");
      if (!kws.has(key)) kws.set(key, v === "true" ? "" : v);
    }
    return [...attrs, ...[...kws.keys()].sort().map(k => kws.get(k) ? k + "-" + kws.get(k) : k)].join("-");
  }
  function canonicalizeTag(tag) {
    if (!/^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$/.test(tag)) throw badLocale();
    const sub = tag.toLowerCase().split("-"), out = [], exts = [], seen = new Set(), variants = [];
    let i = 0, priv = "";
    const next = re => re.test(sub[i] || "");
    if (!next(/^([a-z]{2,3}|[a-z]{5,8})$/)) throw badLocale();
    out.push(LANG_ALIAS[sub[i]] || sub[i]); i++;
    if (next(/^[a-z]{4}$/)) { out.push(sub[i][0].toUpperCase() + sub[i].slice(1)); i++; }
    if (next(/^([a-z]{2}|\d{3})$/)) out.push(sub[i++].toUpperCase());
    while (next(/^([a-z0-9]{5,8}|\d[a-z0-9]{3})$/)) { if (variants.includes(sub[i])) throw badLocale(); variants.push(sub[i++]); }
    out.push(...variants.sort());
    while (i < sub.length) {
      const s = sub[i++];
      if (s === "x") {
        const rest = sub.slice(i);
        if (!rest.length || !rest.every(p => /^[a-z0-9]{1,8}$/.test(p))) throw badLocale();
        priv = "x-" + rest.join("-");
        break;
      }
      if (!/^[0-9a-wyz]$/.test(s) || seen.has(s)) throw badLocale();
      seen.add(s);
      const parts = [];
      while (next(/^[a-z0-9]{2,8}$/)) parts.push(sub[i++]);
      if (!parts.length) throw badLocale();
      exts.push(s + "-" + (s === "u" ? canonicalizeU(parts) : parts.join("-")));
    }
    return [...out, ...exts.sort(), ...(priv ? [priv] : [])].join("-");
  }
  function canonicalizeLocaleList(locales) {
    if (locales === undefined) return [];
    if (locales === null) throw new TypeError("Cannot convert undefined or null to object");
    const O = typeof locales === "string" ? [locales] : Object(locales), list = [];
    const len = Math.min(Math.max(Math.floor(Number(O.length)) || 0, 0), 2 ** 32);
    for (let k = 0; k < len; k++) {
      if (!(k in O)) continue;
      const v = O[k];
      if (typeof v !== "string" && (typeof v !== "object" || v === null)) throw new TypeError("Language ID should be string or object.");
      const tag = canonicalizeTag(String(v));
      if (!list.includes(tag)) list.push(tag);
    }
    return list;
  }
  const EXT_VALUES = { nu: ["latn"], ca: ["gregory"], hc: ["h11", "h12", "h23", "h24"], kn: ["true", "false"], kf: ["upper", "lower", "false"], co: [] };
  // ResolveLocale with a single available locale: en-US, plus the supported
  // -u- keywords of the first requested tag unless an option overrides them.
  function resolveLocale(locales, keys, opt) {
    const requested = canonicalizeLocaleList(locales), ext = {}, values = {}, kept = [];
    if (requested.length) {
      const sub = requested[0].replace(/(^|-)x-.*$/, "").split("-");
      let i = sub.indexOf("u");
      if (i > 0) {
        for (i++; i < sub.length && sub[i].length > 2; i++);
        while (i < sub.length && sub[i].length === 2) {
          const k = sub[i++], v = [];
          while (i < sub.length && sub[i].length > 2) v.push(sub[i++]);
          if (!(k in ext)) ext[k] = v.join("-") || "true";
        }
      }
    }
    for (const k of keys) {
      let v = ext[k];
      if (v !== undefined && !EXT_VALUES[k].includes(v)) v = undefined;
      const o = opt && opt[k];
      if (o != null && EXT_VALUES[k].includes(o)) { if (v !== o) v = undefined; values[k] = o; } else values[k] = v;
      if (v !== undefined) kept.push(v === "true" ? k : k + "-" + v);
    }
    return { locale: "en-US" + (kept.length ? "-u-" + kept.join("-") : ""), ...values };
  }
  function supportedLocalesOf(locales, options) {
    const list = canonicalizeLocaleList(locales);
    if (options !== undefined) getOption(coerceOptions(options), "localeMatcher", "string", ["lookup", "best fit"], "best fit", "supportedLocalesOf");
    return list.filter(t => /^en(-|$)/.test(t));
  }
  const readMatcher = (o, ctor) => getOption(o, "localeMatcher", "string", ["lookup", "best fit"], "best fit", ctor);
  function readNumberingSystem(o, ctor) {
    const nu = getOption(o, "numberingSystem", "string", undefined, undefined, ctor);
    if (nu !== undefined && !/^[a-zA-Z0-9]{3,8}(-[a-zA-Z0-9]{3,8})*$/.test(nu)) throw new RangeError(`Invalid numberingSystem : ${nu}`);
    return nu;
  }

  // ---- exact decimals: value = n * 10^e with n a non-negative BigInt -----------
  function dec(n, e) {
    if (n === 0n) return { n, e: 0 };
    while (n % 10n === 0n) { n /= 10n; e++; }
    return { n, e };
  }
  function decFromString(s) {
    const m = /^(\d*)(?:\.(\d*))?(?:e([+-]?\d+))?$/i.exec(s), frac = m[2] || "";
    return dec(BigInt((m[1] || "") + frac || "0"), (m[3] ? Number(m[3]) : 0) - frac.length);
  }
  const magnitude = d => d.n === 0n ? 0 : d.n.toString().length - 1 + d.e;
  // The mathematical value of a Number, BigInt or numeric string: { neg, d } or { neg, nan } / { neg, inf }.
  function toIntlMV(x) {
    if (typeof x === "object" && x !== null) x = typeof x.valueOf() === "bigint" ? x.valueOf() : Number(x);
    if (typeof x === "bigint") return { neg: x < 0n, d: dec(x < 0n ? -x : x, 0) };
    if (typeof x === "string") {
      const t = x.trim(), num = Number(t), m = /^([+-]?)((?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)$/i.exec(t);
      if (m && isFinite(num)) return { neg: m[1] === "-", d: decFromString(m[2]) };
      x = num;
    } else x = Number(x);
    if (x !== x) return { neg: false, nan: true };
    const neg = x < 0 || Object.is(x, -0);
    return isFinite(x) ? { neg, d: decFromString(String(Math.abs(x))) } : { neg, inf: true };
  }
  const ROUNDING = { ceil: ["inf", "zero"], floor: ["zero", "inf"], expand: ["inf", "inf"], trunc: ["zero", "zero"], halfCeil: ["half-inf", "half-zero"], halfFloor: ["half-zero", "half-inf"], halfExpand: ["half-inf", "half-inf"], halfTrunc: ["half-zero", "half-zero"], halfEven: ["half-even", "half-even"] };
  // Round d to a multiple of inc * 10^m.
  function roundDec(d, m, inc, mode, neg) {
    if (d.n === 0n || (d.e >= m && inc === 1)) return d;
    const shift = m - d.e, I = BigInt(inc);
    let q, r = 0n, div = 1n;
    if (shift <= 0) q = d.n * 10n ** BigInt(-shift); else { div = 10n ** BigInt(shift); q = d.n / div; r = d.n % div; }
    const unit = I * div, rest = (q % I) * div + r;
    q /= I;
    if (rest !== 0n) {
      const um = ROUNDING[mode][neg ? 1 : 0];
      let up = um === "inf";
      if (um[0] === "h") { const c = 2n * rest - unit; up = c > 0n || (c === 0n && (um === "half-inf" || (um === "half-even" && q % 2n === 1n))); }
      if (up) q += 1n;
    }
    return dec(q * I, m);
  }

  // ---- number formatting data (CLDR en) -----------------------------------------
  // code:symbol|narrow symbol|name (one)|name (other; "" = one+"s", "=" = one)|digits
  const CURRENCY = "USD:$||US dollar;EUR:\u20ac||euro;JPY:\u00a5||Japanese yen|=|0;GBP:\u00a3||British pound;CNY:CN\u00a5|\u00a5|Chinese yuan|=;AUD:A$|$|Australian dollar;CAD:CA$|$|Canadian dollar;CHF:||Swiss franc;HKD:HK$|$|Hong Kong dollar;SGD:|$|Singapore dollar;SEK:|kr|Swedish krona|Swedish kronor;KRW:\u20a9||South Korean won|=|0;NOK:|kr|Norwegian krone|Norwegian kroner;NZD:NZ$|$|New Zealand dollar;INR:\u20b9||Indian rupee;MXN:MX$|$|Mexican peso;TWD:NT$|$|New Taiwan dollar;ZAR:|R|South African rand|=;BRL:R$||Brazilian real;DKK:|kr|Danish krone|Danish kroner;PLN:|z\u0142|Polish zloty;THB:|\u0e3f|Thai baht|=;ILS:\u20aa||Israeli new shekel;IDR:|Rp|Indonesian rupiah||0;CZK:|K\u010d|Czech koruna;AED:||UAE dirham;TRY:|\u20ba|Turkish lira|Turkish Lira;HUF:|Ft|Hungarian forint||0;CLP:|$|Chilean peso||0;SAR:||Saudi riyal;PHP:\u20b1||Philippine peso;MYR:|RM|Malaysian ringgit;COP:|$|Colombian peso||0;RUB:|\u20bd|Russian ruble;RON:|lei|Romanian leu|Romanian lei;VND:\u20ab||Vietnamese dong|=|0;ARS:|$|Argentine peso;EGP:|E\u00a3|Egyptian pound;NGN:|\u20a6|Nigerian naira;PKR:|Rs|Pakistani rupee||0;UAH:|\u20b4|Ukrainian hryvnia;KWD:||Kuwaiti dinar||3;BHD:||Bahraini dinar||3;ISK:|kr|Icelandic kr\u00f3na|Icelandic kr\u00f3nur|0;XAF:FCFA||Central African CFA franc||0;XOF:F\u202fCFA||West African CFA franc||0;XPF:CFPF||CFP franc||0;XCD:EC$|$|East Caribbean dollar";
  const CUR = {};
  for (const row of CURRENCY.split(";")) {
    const [code, rest] = row.split(":"), [sym, nar, one, other, digits] = rest.split("|");
    CUR[code] = { symbol: sym || code, narrow: nar || sym || code, one, other: other === "=" ? one : other || one + "s", digits: digits ? +digits : 2 };
  }
  const currencyDigits = c => CUR[c] ? CUR[c].digits : ({ BIF: 0, CLF: 4, DJF: 0, GNF: 0, IQD: 0, JOD: 3, KMF: 0, LYD: 3, OMR: 3, PYG: 0, RWF: 0, TND: 3, UGX: 0, UYI: 0, UYW: 4, VUV: 0 })[c] ?? 2;
  // unit:long one[/other]|short one[/other]|narrow|per-unit short|per-unit narrow (blank = derived)
  const UNITDATA = "acre:acre| ac;bit:bit;byte:byte||B;celsius:degree Celsius/degrees Celsius|\u00b0C;centimeter:centimeter| cm;day:day| day/days|d|d;degree:degree| deg|\u00b0;fahrenheit:degree Fahrenheit/degrees Fahrenheit|\u00b0F|\u00b0;fluid-ounce:fluid ounce| fl oz;foot:foot/feet| ft|\u2032||ft;gallon:gallon| gal||gal US;gigabit:gigabit| Gb;gigabyte:gigabyte| GB;gram:gram| g;hectare:hectare| ha;hour:hour| hr|h|h;inch:inch/inches| in|\u2033||in;kilobit:kilobit| kb;kilobyte:kilobyte| kB;kilogram:kilogram| kg;kilometer:kilometer| km;liter:liter| L;megabit:megabit| Mb;megabyte:megabyte| MB;meter:meter| m;microsecond:microsecond| \u03bcs;mile:mile| mi;mile-scandinavian:mile-scandinavian/miles-scandinavian| smi;milliliter:milliliter| mL;millimeter:millimeter| mm;millisecond:millisecond| ms;minute:minute| min|m||min;month:month| mth/mths|m|m;nanosecond:nanosecond| ns;ounce:ounce| oz;percent:percent/percent|%;petabyte:petabyte| PB;pound:pound| lb|#||lb;second:second| sec|s|s;stone:stone| st;terabit:terabit| Tb;terabyte:terabyte| TB;week:week| wk/wks|w|w;yard:yard| yd;year:year| yr/yrs|y|y";
  const UNITS = {};
  for (const row of UNITDATA.split(";")) {
    const [name, rest] = row.split(":"), [long, short, narrow, perShort, perNarrow] = rest.split("|");
    const [l1, l2 = l1 + "s"] = long.split("/"), [s1, s2 = s1] = (short || " " + l1).split("/"), n = narrow || s1.trim();
    UNITS[name] = { long: [" " + l1, " " + l2], short: [s1, s2[0] === " " || s1[0] !== " " ? s2 : " " + s2], narrow: [n, n], per: ["per " + l1, "/" + (perShort || s1.trim()), "/" + (perNarrow || n)] };
  }
  const SPECIAL_UNITS = { "mile-per-hour": " mph", "mile-per-gallon": " mpg" };
  function unitPattern(unit, display, one) {
    const i = one ? 0 : 1;
    if (UNITS[unit]) return UNITS[unit][display][i];
    const [num, den] = unit.split("-per-");
    if (display !== "long" && SPECIAL_UNITS[unit]) return display === "short" ? SPECIAL_UNITS[unit] : SPECIAL_UNITS[unit].trim();
    return UNITS[num][display][i] + (display === "long" ? " " : "") + UNITS[den].per[display === "long" ? 0 : display === "short" ? 1 : 2];
  }
  const isUnit = u => hasOwnUnit(u) || (u.split("-per-").length === 2 && u.split("-per-").every(hasOwnUnit));
  const hasOwnUnit = u => Object.hasOwn(UNITS, u);
  const COMPACT = ["K", "M", "B", "T"], COMPACT_LONG = [" thousand", " million", " billion", " trillion"];
  const pluralOne = (int, frac) => int === "1" && frac === "";

  // ---- Intl.NumberFormat ------------------------------------------------------
  function setDigitOptions(s, o, mnfdDefault, mxfdDefault, notation, ctor) {
    const mnid = getNumberOption(o, "minimumIntegerDigits", 1, 21, 1);
    let mnfd = o.minimumFractionDigits, mxfd = o.maximumFractionDigits, mnsd = o.minimumSignificantDigits, mxsd = o.maximumSignificantDigits;
    const inc = getNumberOption(o, "roundingIncrement", 1, 5000, 1);
    if (![1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000].includes(inc)) throw new RangeError("roundingIncrement value is out of range.");
    const roundingMode = getOption(o, "roundingMode", "string", Object.keys(ROUNDING), "halfExpand", ctor);
    const priority = getOption(o, "roundingPriority", "string", ["auto", "morePrecision", "lessPrecision"], "auto", ctor);
    const tzd = getOption(o, "trailingZeroDisplay", "string", ["auto", "stripIfInteger"], "auto", ctor);
    if (inc !== 1) mxfdDefault = mnfdDefault;
    const hasSd = mnsd !== undefined || mxsd !== undefined, hasFd = mnfd !== undefined || mxfd !== undefined;
    let needSd = true, needFd = true;
    if (priority === "auto") { needSd = hasSd; if (needSd || (!hasFd && notation === "compact")) needFd = false; }
    if (needSd) {
      if (hasSd) { mnsd = numberOption(mnsd, 1, 21, 1, "minimumSignificantDigits"); mxsd = numberOption(mxsd, mnsd, 21, 21, "maximumSignificantDigits"); }
      else { mnsd = 1; mxsd = 21; }
    }
    if (needFd) {
      if (hasFd) {
        mnfd = numberOption(mnfd, 0, 100, undefined, "minimumFractionDigits");
        mxfd = numberOption(mxfd, 0, 100, undefined, "maximumFractionDigits");
        if (mnfd === undefined) mnfd = Math.min(mnfdDefault, mxfd);
        else if (mxfd === undefined) mxfd = Math.max(mxfdDefault, mnfd);
        else if (mnfd > mxfd) throw new RangeError("maximumFractionDigits value is out of range.");
      } else { mnfd = mnfdDefault; mxfd = mxfdDefault; }
    }
    let type;
    if (!needSd && !needFd) { mnfd = 0; mxfd = 0; mnsd = 1; mxsd = 2; type = "morePrecision"; }
    else type = priority === "auto" ? (hasSd ? "significantDigits" : "fractionDigits") : priority;
    if (inc !== 1) {
      if (type !== "fractionDigits") throw new TypeError("RoundingType is not fractionDigits");
      if (mxfd !== mnfd) throw new RangeError("maximumFractionDigits not equal to minimumFractionDigits");
    }
    Object.assign(s, { mnid, mnfd, mxfd, mnsd, mxsd, roundingType: type, roundingIncrement: inc, roundingMode, roundingPriority: type === "morePrecision" && priority === "auto" ? "morePrecision" : priority, trailingZeroDisplay: tzd });
  }
  function roundNumber(s, d, neg) {
    const bySig = () => { const r = roundDec(d, magnitude(d) - s.mxsd + 1, 1, s.roundingMode, neg); return { d: r, rm: (r.n === 0n ? 0 : magnitude(r)) - s.mxsd + 1, minFrac: Math.max(0, s.mnsd - 1 - magnitude(r)) }; };
    const byFrac = () => ({ d: roundDec(d, -s.mxfd, s.roundingIncrement, s.roundingMode, neg), rm: -s.mxfd, minFrac: s.mnfd });
    let res;
    if (s.roundingType === "significantDigits") res = bySig();
    else if (s.roundingType === "fractionDigits") res = byFrac();
    else { const a = bySig(), b = byFrac(); res = (a.rm <= b.rm) === (s.roundingType === "morePrecision") ? a : b; }
    if (s.trailingZeroDisplay === "stripIfInteger" && res.d.e >= 0) res.minFrac = 0;
    return res;
  }
  // Round with a magnitude-dependent multiplier (compact/scientific), redoing it once on carry like ICU.
  function roundScaled(s, d, neg, multiplierFor) {
    if (d.n === 0n) { const r = roundNumber(s, d, neg); return { ...r, exp: 0 }; }
    const mag = magnitude(d);
    let mult = multiplierFor(mag), r = roundNumber(s, { n: d.n, e: d.e - mult }, neg);
    if (r.d.n !== 0n && magnitude(r.d) !== mag - mult) {
      const m2 = multiplierFor(mag + 1);
      if (m2 !== mult) { mult = m2; r = roundNumber(s, { n: d.n, e: d.e - mult }, neg); }
    }
    return { ...r, exp: mult };
  }
  function groupInt(s, int) {
    const g = s.useGrouping;
    if (g === false || int.length < (g === "min2" ? 5 : 4)) return [int];
    const out = [], first = int.length % 3 || 3;
    out.push(int.slice(0, first));
    for (let i = first; i < int.length; i += 3) out.push(int.slice(i, i + 3));
    return out;
  }
  // Format x into part lists: pre (sign, currency), num (digits, exponent, compact), post
  // (percent, ")"), outer (unit or currency name) and outerOther (its plural "other" form),
  // so that format and formatRange can share them.
  function numberPieces(s, x) {
    const mv = toIntlMV(x), num = [];
    let zero = false, one = false, exp = null, compact = null;
    if (mv.nan) num.push({ type: "nan", value: "NaN" });
    else if (mv.inf) num.push({ type: "infinity", value: "\u221e" });
    else {
      let d = mv.d;
      if (s.style === "percent") d = { n: d.n, e: d.e + 2 };
      let r;
      if (s.notation === "compact") r = roundScaled(s, d, mv.neg, m => m < 3 ? 0 : Math.min(Math.floor(m / 3), 4) * 3);
      else if (s.notation === "scientific") r = roundScaled(s, d, mv.neg, m => m);
      else if (s.notation === "engineering") r = roundScaled(s, d, mv.neg, m => Math.floor(m / 3) * 3);
      else r = { ...roundNumber(s, d, mv.neg), exp: 0 };
      const str = r.d.n.toString();
      let int, frac;
      if (r.d.n === 0n) { int = "0"; frac = ""; }
      else if (r.d.e >= 0) { int = str + "0".repeat(r.d.e); frac = ""; }
      else { const k = -r.d.e, p = str.padStart(k + 1, "0"); int = p.slice(0, p.length - k); frac = p.slice(p.length - k); }
      frac = frac.padEnd(r.minFrac, "0");
      int = int.padStart(s.mnid, "0");
      zero = r.d.n === 0n;
      one = pluralOne(int, frac) && !r.exp;
      groupInt(s, int).forEach((g, i) => { if (i) num.push({ type: "group", value: "," }); num.push({ type: "integer", value: g }); });
      if (frac) num.push({ type: "decimal", value: "." }, { type: "fraction", value: frac });
      if (s.notation === "compact") { if (r.exp) compact = r.exp / 3 - 1; }
      else if (s.notation !== "standard") exp = r.exp;
    }
    if (exp !== null) {
      num.push({ type: "exponentSeparator", value: "E" });
      if (exp < 0) num.push({ type: "exponentMinusSign", value: "-" });
      num.push({ type: "exponentInteger", value: String(Math.abs(exp)) });
    }
    if (compact !== null) {
      if (s.compactDisplay === "long" && s.style !== "currency") num.push({ type: "literal", value: " " }, { type: "compact", value: COMPACT_LONG[compact].slice(1) });
      else num.push({ type: "compact", value: COMPACT[compact] });
    }
    // sign
    const sd = s.signDisplay, isZero = !mv.nan && !mv.inf && zero;
    let sign = "";
    if (sd === "auto") sign = mv.neg ? "-" : "";
    else if (sd === "always") sign = mv.neg ? "-" : "+";
    else if (sd === "exceptZero") sign = isZero || mv.nan ? "" : mv.neg ? "-" : "+";
    else if (sd === "negative") sign = mv.neg && !isZero ? "-" : "";
    const signPart = sign ? [{ type: sign === "-" ? "minusSign" : "plusSign", value: sign }] : [];
    const pre = [], post = [], outer = [], outerOther = [];
    if (s.style === "currency") {
      if (s.currencyDisplay === "name") {
        pre.push(...signPart);
        outer.push({ type: "literal", value: " " }, { type: "currency", value: one ? s.cur.one : s.cur.other });
        outerOther.push({ type: "literal", value: " " }, { type: "currency", value: s.cur.other });
      } else {
        const sym = s.currencyDisplay === "code" ? s.currency : s.currencyDisplay === "narrowSymbol" ? s.cur.narrow : s.cur.symbol;
        const paren = s.currencySign === "accounting" && sign === "-" && compact === null;
        if (paren) pre.push({ type: "literal", value: "(" }); else pre.push(...signPart);
        pre.push({ type: "currency", value: sym });
        if (/[^\p{S}]$/u.test(sym) && !mv.nan && !mv.inf) pre.push({ type: "literal", value: "\u00a0" });
        if (paren) post.push({ type: "literal", value: ")" });
      }
    } else {
      pre.push(...signPart);
      if (s.style === "percent") post.push({ type: s.notation === "compact" ? "unit" : "percentSign", value: "%" });
      else if (s.style === "unit") {
        for (const [list, isOne] of [[outer, one], [outerOther, false]]) {
          const m = /^(\s?)(.*)$/.exec(unitPattern(s.unit, s.unitDisplay, isOne));
          if (m[1]) list.push({ type: "literal", value: m[1] });
          list.push({ type: "unit", value: m[2] });
        }
      }
    }
    return { pre, num, post, outer, outerOther, one, key: joinParts([...pre, ...num, ...post, ...outer]) };
  }
  const pieceParts = p => [...p.pre, ...p.num, ...p.post, ...p.outer];

  function NumberFormat(locales, options) {
    const obj = new.target ? this : Object.create(NumberFormat.prototype);
    const o = coerceOptions(options, "NumberFormat"), C = "NumberFormat", s = { kind: C };
    readMatcher(o, C);
    const nu = readNumberingSystem(o, C);
    Object.assign(s, resolveLocale(locales, ["nu"], { nu }));
    s.style = getOption(o, "style", "string", ["decimal", "percent", "currency", "unit"], "decimal", C);
    let currency = getOption(o, "currency", "string", undefined, undefined, C);
    if (currency !== undefined && !/^[A-Za-z]{3}$/.test(currency)) throw new RangeError(`Invalid currency code : ${currency}`);
    s.currencyDisplay = getOption(o, "currencyDisplay", "string", ["code", "symbol", "narrowSymbol", "name"], "symbol", C);
    s.currencySign = getOption(o, "currencySign", "string", ["standard", "accounting"], "standard", C);
    const unit = getOption(o, "unit", "string", undefined, undefined, C);
    if (unit !== undefined && !isUnit(unit)) throw new RangeError(`Invalid unit argument for Intl.NumberFormat() '${unit}'`);
    s.unitDisplay = getOption(o, "unitDisplay", "string", ["short", "narrow", "long"], "short", C);
    if (s.style === "currency") {
      if (currency === undefined) throw new TypeError("Currency code is required with currency style.");
      s.currency = currency.toUpperCase();
      s.cur = CUR[s.currency] || { symbol: s.currency, narrow: s.currency, one: s.currency, other: s.currency };
    }
    if (s.style === "unit") {
      if (unit === undefined) throw new TypeError("Invalid unit argument for Intl.NumberFormat() ''");
      s.unit = unit;
    }
    s.notation = getOption(o, "notation", "string", ["standard", "scientific", "engineering", "compact"], "standard", C);
    const cd = s.style === "currency" ? currencyDigits(s.currency) : 0;
    setDigitOptions(s, o, s.style === "currency" ? cd : 0, s.style === "currency" ? cd : s.style === "percent" ? 0 : 3, s.notation, C);
    s.compactDisplay = getOption(o, "compactDisplay", "string", ["short", "long"], "short", C);
    let g = o.useGrouping;
    const gDefault = s.notation === "compact" ? "min2" : "auto";
    if (g === undefined) g = gDefault;
    else if (g === true) g = "always";
    else if (!g) g = false;
    else { g = String(g); if (g === "true" || g === "false") g = gDefault; else if (!["min2", "auto", "always"].includes(g)) throw new RangeError(`Value ${g} out of range for Intl.NumberFormat options property useGrouping`); }
    s.useGrouping = g;
    s.signDisplay = getOption(o, "signDisplay", "string", ["auto", "never", "always", "exceptZero", "negative"], "auto", C);
    SLOTS.set(obj, s);
    return obj;
  }
  function nfFormatRange(s, x, y) {
    if (x === undefined || y === undefined) throw new TypeError(`Invalid ${x === undefined ? "start" : "end"} : undefined`);
    for (const [v, n] of [[x, "start"], [y, "end"]]) if (toIntlMV(v).nan) throw new RangeError(`Invalid ${n} : NaN`);
    const a = numberPieces(s, x), b = numberPieces(s, y), tag = (parts, source) => parts.map(p => ({ ...p, source }));
    if (a.key === b.key) {
      // Both ends round to the same text: "~5". (ICU drops the sign inside accounting parentheses.)
      const parts = pieceParts(a);
      if (parts[0].value !== "(") parts.unshift({ type: "approximatelySign", value: "~" });
      return tag(parts, "shared");
    }
    const same = (p, q) => joinParts(p) === joinParts(q);
    const collapseOuter = same(a.outerOther, b.outerOther);
    const mid = joinParts([...a.pre, ...a.post]);
    const collapseMiddle = collapseOuter && same(a.pre, b.pre) && same(a.post, b.post) && [...mid].length > 1;
    const repeat = (!collapseMiddle && (a.pre.length || a.post.length)) || !collapseOuter || a.num.some(p => p.type === "compact" || p.type === "exponentSeparator");
    const dash = { type: "literal", value: repeat ? " \u2013 " : "\u2013", source: "shared" };
    if (collapseMiddle) return [...tag(a.pre, "shared"), ...tag(a.num, "startRange"), dash, ...tag(b.num, "endRange"), ...tag(a.post, "shared"), ...tag(a.outerOther, "shared")];
    if (collapseOuter) return [...tag([...a.pre, ...a.num, ...a.post], "startRange"), dash, ...tag([...b.pre, ...b.num, ...b.post], "endRange"), ...tag(a.outerOther, "shared")];
    return [...tag(pieceParts(a), "startRange"), dash, ...tag(pieceParts(b), "endRange")];
  }
  defineClass(NumberFormat, "NumberFormat", {
    format: { getter: s => s.bound || (s.bound = x => joinParts(pieceParts(numberPieces(s, x)))) },
    formatToParts(s, x) { return pieceParts(numberPieces(s, x)); },
    formatRange(s, x, y) { return joinParts(nfFormatRange(s, x, y)); },
    formatRangeToParts(s, x, y) { return nfFormatRange(s, x, y); },
    resolvedOptions(s) {
      const r = { locale: s.locale, numberingSystem: "latn", style: s.style };
      if (s.style === "currency") Object.assign(r, { currency: s.currency, currencyDisplay: s.currencyDisplay, currencySign: s.currencySign });
      if (s.style === "unit") Object.assign(r, { unit: s.unit, unitDisplay: s.unitDisplay });
      r.minimumIntegerDigits = s.mnid;
      if (s.roundingType !== "fractionDigits") Object.assign(r, { minimumSignificantDigits: s.mnsd, maximumSignificantDigits: s.mxsd });
      if (s.roundingType !== "significantDigits") Object.assign(r, { minimumFractionDigits: s.mnfd, maximumFractionDigits: s.mxfd });
      Object.assign(r, { useGrouping: s.useGrouping, notation: s.notation });
      if (s.notation === "compact") r.compactDisplay = s.compactDisplay;
      return Object.assign(r, { signDisplay: s.signDisplay, roundingMode: s.roundingMode, roundingIncrement: s.roundingIncrement, trailingZeroDisplay: s.trailingZeroDisplay, roundingPriority: s.roundingPriority });
    },
  });

  // ---- Intl.PluralRules ---------------------------------------------------------
  function PluralRules(locales, options) {
    if (!new.target) throw new TypeError("Constructor Intl.PluralRules requires 'new'");
    const o = coerceOptions(options, "PluralRules"), C = "PluralRules", s = { kind: C };
    readMatcher(o, C);
    s.type = getOption(o, "type", "string", ["cardinal", "ordinal"], "cardinal", C);
    setDigitOptions(s, o, 0, 3, "standard", C);
    s.locale = resolveLocale(locales, []).locale;
    SLOTS.set(this, s);
  }
  function pluralSelect(s, n) {
    n = +n;
    if (!isFinite(n)) return "other";
    const mv = toIntlMV(n), r = roundNumber(s, mv.d, mv.neg);
    let int = r.d.n === 0n ? "0" : r.d.e >= 0 ? r.d.n.toString() + "0".repeat(r.d.e) : "";
    if (r.d.e < 0) { const p = r.d.n.toString().padStart(-r.d.e + 1, "0"); int = p.slice(0, p.length + r.d.e); }
    const visibleFrac = Math.max(r.minFrac, r.d.e < 0 ? -r.d.e : 0);
    if (s.type === "cardinal") return int === "1" && visibleFrac === 0 ? "one" : "other";
    if (r.d.e < 0) return "other";
    const i10 = +int.slice(-1), i100 = +int.slice(-2);
    return i10 === 1 && i100 !== 11 ? "one" : i10 === 2 && i100 !== 12 ? "two" : i10 === 3 && i100 !== 13 ? "few" : "other";
  }
  defineClass(PluralRules, "PluralRules", {
    select(s, n) { return pluralSelect(s, n); },
    selectRange(s, x, y) {
      if (x === undefined || y === undefined) throw new TypeError(`Invalid ${x === undefined ? "startRange" : "endRange"} : undefined`);
      x = +x; y = +y;
      if (x !== x) throw new RangeError("Invalid startRange : NaN");
      if (y !== y) throw new RangeError("Invalid endRange : NaN");
      return "other";
    },
    resolvedOptions(s) {
      const r = { locale: s.locale, type: s.type, minimumIntegerDigits: s.mnid };
      if (s.roundingType !== "fractionDigits") Object.assign(r, { minimumSignificantDigits: s.mnsd, maximumSignificantDigits: s.mxsd });
      if (s.roundingType !== "significantDigits") Object.assign(r, { minimumFractionDigits: s.mnfd, maximumFractionDigits: s.mxfd });
      r.pluralCategories = s.type === "cardinal" ? ["one", "other"] : ["few", "one", "two", "other"];
      return r;
    },
  });

  // ---- date/time patterns: a port of ICU's DateTimePatternGenerator (CLDR en) -----
  const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
  const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
  const THIN = "\u2009\u2013\u2009";
  const DATE_STYLES = ["EEEE, MMMM d, y", "MMMM d, y", "MMM d, y", "M/d/yy"];
  const TIME_STYLES = ["h:mm:ss\u202fa zzzz", "h:mm:ss\u202fa z", "h:mm:ss\u202fa", "h:mm\u202fa"];
  const STYLE_NAMES = ["full", "long", "medium", "short"];
  const GLUE_AT = ["{1} 'at' {0}", "{1} 'at' {0}", "{1}, {0}", "{1}, {0}"];
  const AVAILABLE = "Bh=h B;Bhm=h:mm B;Bhms=h:mm:ss B;E=ccc;EBhm=E h:mm B;EBh=E h B;EBhms=E h:mm:ss B;EHm=E HH:mm;EHms=E HH:mm:ss;Ed=d E;Eh=E h\u202fa;Ehm=E h:mm\u202fa;Ehms=E h:mm:ss\u202fa;Gy=y G;GyMMM=MMM y G;GyMMMEd=E, MMM d, y G;GyM=M/y G;GyMEd=E, M/d/y G;GyMMMd=MMM d, y G;GyMd=M/d/y G;H=HH;Hm=HH:mm;Hms=HH:mm:ss;Hmsv=HH:mm:ss v;Hmv=HH:mm v;Hv=HH'h' v;M=L;MEd=E, M/d;MMM=LLL;MMMEd=E, MMM d;MMMMd=MMMM d;MMMd=MMM d;Md=M/d;d=d;h=h\u202fa;hm=h:mm\u202fa;hms=h:mm:ss\u202fa;hmsv=h:mm:ss\u202fa v;hmv=h:mm\u202fa v;hv=h\u202fa v;ms=mm:ss;y=y;yM=M/y;yMEd=E, M/d/y;yMMM=MMM y;yMMMEd=E, MMM d, y;yMMMM=MMMM y;yMMMd=MMM d, y;yMd=M/d/y";
  // appendItems by field (era, year, ..., zone); {2} is the quoted field display name
  const APPEND = ["{0} {1}", "{0} {1}", "{0} ({2}: {1})", "{0} ({2}: {1})", "{0} ({2}: {1})", "", "{0} {1}", "", "", "{0} ({2}: {1})", "", "{0} ({2}: {1})", "{0} ({2}: {1})", "{0} ({2}: {1})", "", "{0} {1}"];
  const FIELD_NAMES = ["era", "year", "quarter", "month", "week", "week of month", "day of the week", "day of year", "weekday of the month", "day", "AM/PM", "hour", "minute", "second", "F14", "time zone"];
  const NUM = 0x100, NARROW = -0x101, SHORTER = -0x102, SHORT = -0x103, LONG = -0x104, DLT = 0x10;
  // [pattern char, field, type, minimum length] as in ICU's dtTypes
  const ROWS = [["G", 0, SHORT, 1], ["G", 0, LONG, 4], ["G", 0, NARROW, 5], ["y", 1, NUM, 1], ["Q", 2, NUM, 1], ["Q", 2, SHORT, 3], ["Q", 2, LONG, 4],
    ["M", 3, NUM, 1], ["M", 3, SHORT, 3], ["M", 3, LONG, 4], ["M", 3, NARROW, 5], ["L", 3, NUM + DLT, 1], ["L", 3, SHORT - DLT, 3], ["L", 3, LONG - DLT, 4], ["L", 3, NARROW - DLT, 5],
    ["w", 4, NUM, 1], ["W", 5, NUM, 1], ["E", 6, SHORT, 1], ["E", 6, LONG, 4], ["E", 6, NARROW, 5], ["E", 6, SHORTER, 6],
    ["c", 6, NUM + 2 * DLT, 1], ["c", 6, SHORT - 2 * DLT, 3], ["c", 6, LONG - 2 * DLT, 4], ["c", 6, NARROW - 2 * DLT, 5], ["c", 6, SHORTER - 2 * DLT, 6],
    ["d", 9, NUM, 1], ["a", 10, SHORT, 1], ["a", 10, LONG, 4], ["a", 10, NARROW, 5], ["B", 10, SHORT - 3 * DLT, 1], ["B", 10, LONG - 3 * DLT, 4], ["B", 10, NARROW - 3 * DLT, 5],
    ["H", 11, NUM + 10 * DLT, 1], ["k", 11, NUM + 11 * DLT, 1], ["h", 11, NUM, 1], ["K", 11, NUM + DLT, 1], ["m", 12, NUM, 1], ["s", 13, NUM, 1], ["S", 14, NUM, 1],
    ["v", 15, SHORT - 2 * DLT, 1], ["v", 15, LONG - 2 * DLT, 4], ["z", 15, SHORT, 1], ["z", 15, LONG, 4], ["O", 15, SHORT - DLT, 1], ["O", 15, LONG - DLT, 4]];
  function rowFor(ch, len) {
    let best = null;
    for (const r of ROWS) if (r[0] === ch && r[3] <= len) best = r;
    return best;
  }
  // Split a pattern into field tokens {f, n} and literal tokens {lit, raw}.
  function tokenize(p) {
    const out = [];
    for (let i = 0; i < p.length;) {
      const c = p[i];
      if (/[A-Za-z]/.test(c)) { let j = i; while (p[j] === c) j++; out.push({ f: c, n: j - i }); i = j; }
      else if (c === "'") {
        let j = i + 1, lit = "";
        if (p[j] === "'") { out.push({ lit: "'", raw: "''" }); i += 2; continue; }
        for (; j < p.length; j++) { if (p[j] === "'") { if (p[j + 1] === "'") { lit += "'"; j++; } else break; } else lit += p[j]; }
        out.push({ lit, raw: p.slice(i, j + 1) }); i = j + 1;
      } else { let j = i; while (j < p.length && !/[A-Za-z']/.test(p[j])) j++; out.push({ lit: p.slice(i, j), raw: p.slice(i, j) }); i = j; }
    }
    return out;
  }
  function skeletonOf(pattern) {
    const S = { ch: [], len: [], bch: [], blen: [], type: Array(16).fill(0), addedA: false };
    const put = (F, ch, len, row) => { S.ch[F] = ch; S.len[F] = len; S.bch[F] = row[0]; S.blen[F] = row[3]; S.type[F] = row[2] > 0 ? row[2] + len : row[2]; };
    for (const t of tokenize(pattern)) if (t.f) { const row = rowFor(t.f, t.n); if (row) put(row[1], t.f, t.n, row); }
    if (S.len[12] && S.len[14] && !S.len[13]) put(13, "s", 1, rowFor("s", 1));
    if (S.len[11]) {
      if (S.ch[11] === "h" || S.ch[11] === "K") { if (!S.len[10]) { put(10, "a", 1, rowFor("a", 1)); S.addedA = true; } }
      else { S.ch[10] = S.bch[10] = undefined; S.len[10] = S.blen[10] = 0; S.type[10] = 0; }
    }
    S.orig = S.base = "";
    for (let F = 0; F < 16; F++) if (S.len[F]) { S.orig += S.ch[F].repeat(S.len[F]); S.base += S.bch[F].repeat(S.blen[F]); }
    return S;
  }
  const skeletonString = S => { let r = ""; for (let F = 0; F < 16; F++) if (S.len[F] && !(F === 10 && S.addedA)) r += S.ch[F].repeat(S.len[F]); return r; };
  const BOOT = [];
  function addPattern(pattern, skel, override) {
    const S = skeletonOf(skel || pattern), c = S.base.charCodeAt(0), list = BOOT[c < 97 ? c - 65 : c - 71] || (BOOT[c < 97 ? c - 65 : c - 71] = []);
    let dup = list.find(e => e.S.base === S.base);
    if (dup && (!dup.specified || (skel && !override)) && !override) return;
    dup = list.find(e => e.S.orig === S.orig);
    if (dup && (!override || (skel && dup.specified))) return;
    const same = list.find(e => e.S.base === S.base && e.S.type.every((t, i) => t === S.type[i]));
    if (same) { same.pattern = pattern; same.specified = !!skel; } else list.push({ S, pattern, specified: !!skel });
  }
  for (const c of "GyMEdaHmsSv") addPattern(c);
  for (let i = 0; i < 4; i++) { addPattern(DATE_STYLES[i], null, false); addPattern(TIME_STYLES[i], null, false); }
  for (const kv of AVAILABLE.split(";")) { const [k, v] = kv.split("="); addPattern(v, k, true); }
  function bestRaw(src, mask) {
    let best = null, bestD = Infinity, bestMissing = -1;
    for (const list of BOOT) if (list) for (const e of list) {
      let d = 0, missing = 0, extra = 0;
      for (let i = 0; i < 16; i++) {
        const my = mask & (1 << i) ? src.type[i] : 0, other = e.S.type[i];
        if (my === other) continue;
        if (my === 0) { d += 0x10000; extra |= 1 << i; } else if (other === 0) { d += 0x1000; missing |= 1 << i; } else d += Math.abs(my - other);
      }
      if (d < bestD || (d === bestD && bestMissing < missing)) { bestD = d; bestMissing = missing; best = { e, missing, extra }; if (d === 0) return best; }
    }
    return best;
  }
  function adjustFields(pattern, spec, src, fixFrac, hourLen) {
    let out = "";
    for (const t of tokenize(pattern)) {
      if (!t.f) { out += t.raw; continue; }
      const row = rowFor(t.f, t.n);
      let field = t.f.repeat(t.n);
      if (row) {
        const F = row[1];
        if (fixFrac && F === 13) field += "." + "S".repeat(src.len[14]);
        else if (src.type[F]) {
          const reqCh = src.ch[F];
          let reqLen = src.len[F], adj;
          if (reqCh === "E" && reqLen < 3) reqLen = 3;
          adj = reqLen;
          if (F === 12 || F === 13 || (F === 11 && !hourLen)) adj = t.n;
          else if (spec && reqCh !== "c" && reqCh !== "e" && (spec.len[F] === reqLen || (row[2] > 0) !== (src.type[F] > 0))) adj = t.n;
          let c = F !== 11 && F !== 3 && F !== 6 && F !== 1 ? reqCh : t.f;
          if (c === "E" && adj < 3) c = "e";
          if (F === 11 && (reqCh === "h" || reqCh === "K")) c = "h";
          field = c.repeat(adj);
        }
      }
      out += field;
    }
    return out;
  }
  const quoteName = n => "'" + n + "'";
  function bestAppending(src, fields, hourLen) {
    if (!fields) return "";
    let r = bestRaw(src, fields), result = adjustFields(r.e.pattern, r.e.specified ? r.e.S : null, src, false, hourLen), missing = r.missing, last = 0;
    while (missing && missing !== last) {
      if ((missing & 0x6000) === 0x4000 && (fields & 0x6000) === 0x6000) { result = adjustFields(result, r.e.specified ? r.e.S : null, src, true, hourLen); missing &= ~0x4000; continue; }
      const start = missing;
      r = bestRaw(src, missing);
      const temp = adjustFields(r.e.pattern, r.e.specified ? r.e.S : null, src, false, hourLen);
      const top = Math.min(31 - Math.clz32(start & ~r.missing), 15);
      result = fill(APPEND[top] || "{0} \u251c{2}: {1}\u2524", [result, temp, quoteName(FIELD_NAMES[top])]);
      last = missing = r.missing;
    }
    return result;
  }
  const PATTERN_CACHE = new Map();
  // V8 asks for UDATPG_MATCH_HOUR_FIELD_LENGTH; ICU's own callers (date intervals) do not.
  function bestPattern(skeleton, hourLen = true) {
    const key = skeleton + (hourLen ? "" : "#");
    if (PATTERN_CACHE.has(key)) return PATTERN_CACHE.get(key);
    const src = skeletonOf(skeleton), r = bestRaw(src, -1);
    let result;
    if (!r.missing && !r.extra) result = adjustFields(r.e.pattern, r.e.specified ? r.e.S : null, src, false, hourLen);
    else {
      let need = 0;
      src.type.forEach((t, i) => { if (t) need |= 1 << i; });
      const date = bestAppending(src, need & 0x3ff, hourLen), time = bestAppending(src, need & 0xfc00, hourLen);
      if (!date || !time) result = date || time;
      else {
        const ml = src.blen[3] || 0;
        result = fill(GLUE_AT[ml === 4 ? (src.len[6] ? 0 : 1) : ml === 3 ? 2 : 3], [time, date]);
      }
    }
    PATTERN_CACHE.set(key, result);
    return result;
  }
  const HC_CHAR = { h11: "K", h12: "h", h23: "H", h24: "k" };
  function replaceHourCycle(pattern, hc) {
    if (!hc) return pattern;
    return tokenize(pattern).map(t => t.f ? ("hHkK".includes(t.f) ? HC_CHAR[hc] : t.f).repeat(t.n) : t.raw).join("");
  }

  // ---- Intl.DateTimeFormat ------------------------------------------------------
  const UTC_NAMES = ["UTC", "ETC/UTC", "GMT", "ETC/GMT", "UCT", "ETC/UCT", "UNIVERSAL", "ETC/UNIVERSAL", "ZULU", "ETC/ZULU", "GREENWICH", "ETC/GREENWICH", "GMT0", "GMT+0", "GMT-0", "ETC/GMT0", "ETC/GMT+0", "ETC/GMT-0"];
  const COMPONENTS = [["weekday", ["narrow", "short", "long"]], ["era", ["narrow", "short", "long"]], ["year", ["2-digit", "numeric"]], ["month", ["2-digit", "numeric", "narrow", "short", "long"]], ["day", ["2-digit", "numeric"]],
    ["dayPeriod", ["narrow", "short", "long"]], ["hour", ["2-digit", "numeric"]], ["minute", ["2-digit", "numeric"]], ["second", ["2-digit", "numeric"]], ["fractionalSecondDigits"],
    ["timeZoneName", ["short", "long", "shortOffset", "longOffset", "shortGeneric", "longGeneric"]]];
  const SKEL = { weekday: { narrow: "EEEEE", short: "EEE", long: "EEEE" }, era: { narrow: "GGGGG", short: "GGG", long: "GGGG" }, year: { "2-digit": "yy", numeric: "y" },
    month: { narrow: "MMMMM", short: "MMM", long: "MMMM", "2-digit": "MM", numeric: "M" }, day: { "2-digit": "dd", numeric: "d" }, dayPeriod: { narrow: "BBBBB", short: "B", long: "BBBB" },
    minute: { "2-digit": "mm", numeric: "m" }, second: { "2-digit": "ss", numeric: "s" }, timeZoneName: { short: "z", long: "zzzz", shortOffset: "O", longOffset: "OOOO", shortGeneric: "v", longGeneric: "vvvv" } };
  function DateTimeFormat(locales, options) {
    const obj = new.target ? this : Object.create(DateTimeFormat.prototype);
    const o = coerceOptions(options), C = "DateTimeFormat", s = { kind: C };
    readMatcher(o, C);
    const ca = getOption(o, "calendar", "string", undefined, undefined, C);
    if (ca !== undefined && !/^[a-zA-Z0-9]{3,8}(-[a-zA-Z0-9]{3,8})*$/.test(ca)) throw new RangeError(`Invalid calendar : ${ca}`);
    const nu = readNumberingSystem(o, C);
    const hour12 = getOption(o, "hour12", "boolean", undefined, undefined, C);
    let hourCycle = getOption(o, "hourCycle", "string", ["h11", "h12", "h23", "h24"], undefined, C);
    if (hour12 !== undefined) hourCycle = null;
    Object.assign(s, resolveLocale(locales, ["ca", "hc", "nu"], { ca, nu, hc: hourCycle }));
    let tz = o.timeZone;
    if (tz === undefined) tz = "UTC";
    else {
      tz = String(tz);
      if (!UTC_NAMES.includes(tz.toUpperCase())) throw new RangeError(`Invalid time zone specified: ${tz} (only UTC is available in this sandbox)`);
      tz = "UTC";
    }
    s.timeZone = tz;
    const comp = {};
    for (const [name, values] of COMPONENTS) comp[name] = name === "fractionalSecondDigits" ? getNumberOption(o, name, 1, 3, undefined) : getOption(o, name, "string", values, undefined, C);
    getOption(o, "formatMatcher", "string", ["basic", "best fit"], "best fit", C);
    s.dateStyle = getOption(o, "dateStyle", "string", STYLE_NAMES, undefined, C);
    s.timeStyle = getOption(o, "timeStyle", "string", STYLE_NAMES, undefined, C);
    let hc = hour12 !== undefined ? (hour12 ? "h12" : "h24") : hourCycle || s.hc;
    let pattern;
    if (s.dateStyle || s.timeStyle) {
      const bad = COMPONENTS.find(([n]) => comp[n] !== undefined);
      if (bad) throw new TypeError(`Can't set option ${bad[0]} when ${s.dateStyle ? "dateStyle" : "timeStyle"} is used`);
      const d = s.dateStyle && DATE_STYLES[STYLE_NAMES.indexOf(s.dateStyle)], t = s.timeStyle && TIME_STYLES[STYLE_NAMES.indexOf(s.timeStyle)];
      pattern = d && t ? fill(GLUE_AT[STYLE_NAMES.indexOf(s.dateStyle)], [t, d]) : d || t;
      if (t && hc && hc !== "h12") pattern = replaceHourCycle(bestPattern(skeletonString(skeletonOf(pattern)).replace(/[abB]/g, "").replace(/[hHkK]/g, HC_CHAR[hc])), hc);
    } else {
      if (!["weekday", "year", "month", "day", "dayPeriod", "hour", "minute", "second", "fractionalSecondDigits"].some(n => comp[n] !== undefined)) comp.year = comp.month = comp.day = "numeric";
      let sk = "";
      for (const [n] of COMPONENTS) {
        const v = comp[n];
        if (v === undefined) continue;
        if (n === "hour") sk += (hc ? HC_CHAR[hc] : "j").repeat(v === "2-digit" ? 2 : 1);
        else if (n === "fractionalSecondDigits") sk += "S".repeat(v);
        else sk += SKEL[n][v];
      }
      pattern = replaceHourCycle(bestPattern(sk.replace(/j/g, "h")), hc);
    }
    s.pattern = pattern;
    s.tokens = tokenize(pattern);
    const hourTok = s.tokens.find(t => "hHkK".includes(t.f));
    s.hourCycle = hourTok ? { K: "h11", h: "h12", H: "h23", k: "h24" }[hourTok.f] : undefined;
    SLOTS.set(obj, s);
    return obj;
  }
  function timeValue(date) {
    let t = date === undefined ? Date.now() : +date;
    if (!isFinite(t) || Math.abs(t) > 8.64e15) throw new RangeError("Invalid time value");
    return Math.trunc(t) + 0;
  }
  function dateFields(t) {
    const d = new Date(t), y = d.getUTCFullYear();
    return { era: y > 0 ? 1 : 0, year: y > 0 ? y : 1 - y, month: d.getUTCMonth(), day: d.getUTCDate(), wd: d.getUTCDay(), hour: d.getUTCHours(), minute: d.getUTCMinutes(), second: d.getUTCSeconds(), ms: d.getUTCMilliseconds() };
  }
  const pad = (n, w) => String(n).padStart(w, "0");
  const FIELD_TYPE = { G: "era", y: "year", M: "month", L: "month", d: "day", E: "weekday", c: "weekday", e: "weekday", a: "dayPeriod", B: "dayPeriod", h: "hour", H: "hour", k: "hour", K: "hour", m: "minute", s: "second", S: "fractionalSecond", z: "timeZoneName", O: "timeZoneName", v: "timeZoneName" };
  function formatField(f, n, v, tokens) {
    switch (f) {
      case "G": return n === 4 ? ["Before Christ", "Anno Domini"][v.era] : n === 5 ? "BA"[v.era] : ["BC", "AD"][v.era];
      case "y": return n === 2 ? pad(v.year % 100, 2) : pad(v.year, n);
      case "M": case "L": return n <= 2 ? pad(v.month + 1, n) : n === 3 ? MONTHS[v.month].slice(0, 3) : n === 4 ? MONTHS[v.month] : MONTHS[v.month][0];
      case "d": return pad(v.day, n);
      case "E": case "c": case "e": return n === 4 ? DAYS[v.wd] : n === 5 ? DAYS[v.wd][0] : n === 6 ? DAYS[v.wd].slice(0, 2) : n <= 2 && f !== "E" ? String(v.wd + 1) : DAYS[v.wd].slice(0, 3);
      case "a": return n === 5 ? "ap"[+(v.hour >= 12)] : ["AM", "PM"][+(v.hour >= 12)];
      case "B": {
        const hasM = tokens.some(t => t.f === "m"), hasS = tokens.some(t => t.f === "s");
        if (v.hour === 12 && (!hasM || v.minute === 0) && (!hasS || v.second === 0)) return n === 5 ? "n" : "noon";
        return v.hour < 12 ? "in the morning" : v.hour < 18 ? "in the afternoon" : v.hour < 21 ? "in the evening" : "at night";
      }
      case "h": return pad(v.hour % 12 || 12, n);
      case "H": return pad(v.hour, n);
      case "K": return pad(v.hour % 12, n);
      case "k": return pad(v.hour || 24, n);
      case "m": return pad(v.minute, n);
      case "s": return pad(v.second, n);
      case "S": return pad(v.ms, 3).slice(0, n).padEnd(n, "0");
      case "z": return n >= 4 ? "Coordinated Universal Time" : "UTC";
      case "O": case "v": return n >= 4 ? "GMT+00:00" : "GMT+0";
    }
    return "";
  }
  function formatTokens(tokens, t) {
    const v = dateFields(t), parts = [];
    for (const tok of tokens) {
      if (tok.f) {
        const type = FIELD_TYPE[tok.f];
        if (type) parts.push({ type, value: formatField(tok.f, tok.n, v, tokens) });
      } else if (tok.lit) {
        if (parts.length && parts[parts.length - 1].type === "literal") parts[parts.length - 1].value += tok.lit;
        else parts.push({ type: "literal", value: tok.lit });
      }
    }
    return parts;
  }
  const dtfParts = (s, t, tokens = s.tokens) => formatTokens(tokens, t);

  // ---- date intervals: a port of ICU's DateIntervalFormat (CLDR en) ----------------
  const INTERVALS = "Bh:B=h B – h B,h=h – h B;Bhm:B=h:mm B – h:mm B,h=h:mm – h:mm B,m=h:mm – h:mm B;Gy:G=y G – y G,y=y – y G;GyM:G=M/y G – M/y G,M=M/y – M/y G,y=M/y – M/y G;" +
    "GyMEd:G=E, M/d/y G – E, M/d/y G,M=E, M/d/y – E, M/d/y G,d=E, M/d/y – E, M/d/y G,y=E, M/d/y – E, M/d/y G;GyMMM:G=MMM y G – MMM y G,M=MMM – MMM y G,y=MMM y – MMM y G;" +
    "GyMMMEd:G=E, MMM d, y G – E, MMM d, y G,M=E, MMM d – E, MMM d, y G,d=E, MMM d – E, MMM d, y G,y=E, MMM d, y – E, MMM d, y G;GyMMMd:G=MMM d, y G – MMM d, y G,M=MMM d – MMM d, y G,d=MMM d – d, y G,y=MMM d, y – MMM d, y G;" +
    "GyMd:G=M/d/y G – M/d/y G,M=M/d/y – M/d/y G,d=M/d/y – M/d/y G,y=M/d/y – M/d/y G;H:H=HH – HH;Hm:H=HH:mm – HH:mm,m=HH:mm – HH:mm;Hmv:H=HH:mm – HH:mm v,m=HH:mm – HH:mm v;Hv:H=HH – HH v;" +
    "M:M=M – M;MEd:M=E, M/d – E, M/d,d=E, M/d – E, M/d;MMM:M=MMM – MMM;MMMEd:M=E, MMM d – E, MMM d,d=E, MMM d – E, MMM d;MMMd:M=MMM d – MMM d,d=MMM d – d;Md:M=M/d – M/d,d=M/d – M/d;d:d=d – d;" +
    "h:a=h\u202fa – h\u202fa,h=h – h\u202fa;hm:a=h:mm\u202fa – h:mm\u202fa,h=h:mm – h:mm\u202fa,m=h:mm – h:mm\u202fa;hmv:a=h:mm\u202fa – h:mm\u202fa v,h=h:mm – h:mm\u202fa v,m=h:mm – h:mm\u202fa v;hv:a=h\u202fa – h\u202fa v,h=h – h\u202fa v;" +
    "y:y=y – y;yM:M=M/y – M/y,y=M/y – M/y;yMEd:M=E, M/d/y – E, M/d/y,d=E, M/d/y – E, M/d/y,y=E, M/d/y – E, M/d/y;yMMM:M=MMM – MMM y,y=MMM y – MMM y;" +
    "yMMMEd:M=E, MMM d – E, MMM d, y,d=E, MMM d – E, MMM d, y,y=E, MMM d, y – E, MMM d, y;yMMMM:M=MMMM – MMMM y,y=MMMM y – MMMM y;yMMMd:M=MMM d – MMM d, y,d=MMM d – d, y,y=MMM d, y – MMM d, y;yMd:M=M/d/y – M/d/y,d=M/d/y – M/d/y,y=M/d/y – M/d/y";
  const ITV = {};
  for (const entry of INTERVALS.split(";")) {
    const key = entry.slice(0, entry.indexOf(":")), rest = entry.slice(key.length + 1);
    ITV[key] = {};
    for (const kv of rest.split(/,(?=[A-Za-z]=)/)) { const [f, p] = kv.split("="); ITV[key][f] = p.replace(" – ", THIN); }
  }
  const LEVEL = { G: 0, y: 10, M: 20, L: 20, d: 30, E: 30, c: 30, e: 30, a: 40, B: 40, h: 50, H: 50, k: 50, K: 50, m: 60, s: 70, S: 80 };
  const FIELD_LEVEL = { G: 0, y: 10, M: 20, d: 30, a: 40, h: 50, m: 60, s: 70, S: 80 };
  function fieldIgnored(pattern, f) {
    return !tokenize(pattern).some(t => t.f && LEVEL[t.f] !== undefined && FIELD_LEVEL[f] <= LEVEL[t.f]);
  }
  function widths(sk) { const w = {}; for (const c of sk) w[c] = (w[c] || 0) + 1; return w; }
  function bestIntervalSkeleton(sk) {
    let replacedV = false;
    if (sk.includes("z")) { sk = sk.replace(/z/g, "v"); replacedV = true; }
    const inW = widths(sk);
    let best = null, bestD = Infinity, info = 0;
    for (const key of Object.keys(ITV)) {
      const w = widths(key);
      let d = 0, diff = 1;
      for (const c of new Set([...Object.keys(w), ...Object.keys(inW)])) {
        const a = inW[c] || 0, b = w[c] || 0;
        if (a === b) continue;
        if (!a || !b) { diff = -1; d += 0x1000; } else if (c === "M" && (a <= 2) !== (b <= 2)) d += 0x100; else d += Math.abs(a - b);
      }
      if (d < bestD) { best = key; bestD = d; info = diff; }
      if (d === 0) { info = 0; break; }
    }
    if (replacedV && info !== -1) info = 2;
    return { best, info };
  }
  function adjustWidth(input, best, pattern, info) {
    if (info === 2) {
      if (input.includes("z")) pattern = pattern.replace(/v/g, "z");
      if (input.includes("K")) pattern = pattern.replace(/h/g, "K");
      if (input.includes("k")) pattern = pattern.replace(/H/g, "k");
    }
    const inW = widths(input), bW = widths(best);
    if (pattern.includes("a") && !bW.a) bW.a = 1;
    return tokenize(pattern).map(t => {
      if (!t.f) return t.raw;
      const sc = t.f === "L" ? "M" : t.f, fc = bW[sc] || 0, ic = inW[sc] || 0;
      return t.f.repeat(fc === t.n && ic > fc ? ic : t.n);
    }).join("");
  }
  // Split an interval pattern before the first field letter seen for the second time.
  function splitInterval(p) {
    const seen = new Set();
    let at = 0;
    for (const t of tokenize(p)) {
      if (t.f && seen.has(t.f)) return { first: p.slice(0, at), second: p.slice(at) };
      if (t.f) seen.add(t.f);
      at += t.f ? t.n : t.raw.length;
    }
    return { first: p, second: "" };
  }
  function intervalInfo(s) {
    if (s.itv) return s.itv;
    const info = { pat: {}, date: null, time: null }, skel = skeletonString(skeletonOf(s.pattern));
    let date = "", time = "", normTime = "", hourChar = "";
    const count = { E: 0, d: 0, M: 0, y: 0, m: 0, z: 0, v: 0 };
    let normDate = "";
    for (const c of skel) {
      if ("EdMy".includes(c)) { date += c; count[c]++; }
      else if ("GYuQqLlWwDFgecUr".includes(c)) { normDate += c; date += c; }
      else if (c === "a") time += c;
      else if ("hHkK".includes(c)) { time += c; hourChar = hourChar || c; }
      else if ("mzv".includes(c)) { time += c; count[c]++; }
      else if ("VZjsSAbB".includes(c)) { time += c; normTime += c; }
    }
    if (count.y) normDate += count.y === 2 ? "yy" : "y";
    if (count.M) normDate += count.M < 3 ? "M" : "M".repeat(Math.min(count.M, 5));
    if (count.E) normDate += count.E <= 3 ? "E" : "E".repeat(Math.min(count.E, 4));
    if (count.d) normDate += "d";
    if (hourChar) normTime += hourChar === "H" || hourChar === "k" ? "H" : "h";
    if (count.m) normTime += "m";
    if (count.z) normTime += "z";
    if (count.v) normTime += "v";
    const hc = s.tokens.find(t => "hHkK".includes(t.f)), icuPattern = sk => hc ? tokenize(bestPattern(sk, false)).map(t => t.f ? ("hHkK".includes(t.f) ? hc.f : t.f).repeat(t.n) : t.raw).join("") : bestPattern(sk, false);
    const setPat = (f, p) => { info.pat[f] = splitInterval(p); };
    const setFallback = (f, p) => { info.pat[f] = { fallback: p }; };
    const prefixDate = () => { const p = icuPattern("yMd" + time); for (const f of "dMy") setFallback(f, p); setFallback("G", icuPattern("GyMd" + time)); };
    const setField = (f, sk, best, diff, ext) => {
      let pattern = ITV[best][f];
      if (!pattern) {
        if (fieldIgnored(best, f)) return false;
        if (f === "a") { pattern = ITV[best].h; if (pattern) setPat(f, adjustWidth(sk, best, pattern, diff)); return false; }
        if (ext) {
          ext.sk = f + sk; ext.best = f + best;
          pattern = ITV[ext.best] && ITV[ext.best][f];
          if (!pattern && (diff === 0 || diff === 1)) {
            const tmp = bestIntervalSkeleton(diff === 0 ? ext.best : ext.sk);
            if (tmp.best && tmp.info !== -1) { pattern = ITV[tmp.best][f]; best = tmp.best; }
          }
        }
      }
      if (pattern) setPat(f, adjustWidth(sk, best, pattern, diff));
      return !!(ext && ext.sk);
    };
    s.itv = info;
    const target = normTime || normDate, { best, info: diff } = bestIntervalSkeleton(target);
    if (normDate) info.date = icuPattern(normDate);
    if (normTime) info.time = icuPattern(normTime);
    if (diff === -1) { if (time && !date) prefixDate(); return info; }
    if (!normTime) {
      let sk = normDate, b = best;
      setField("d", sk, b, diff, {});
      const ext = {};
      if (setField("M", sk, b, diff, ext)) { sk = ext.sk; b = ext.best; }
      setField("y", sk, b, diff, {});
      setField("G", sk, b, diff, {});
      return info;
    }
    for (const f of "mha") setField(f, normTime, best, diff, null);
    if (!date) prefixDate();
    else {
      let sk = skel;
      for (const f of "dMyG") if (!date.includes(f)) { sk = f + sk; setFallback(f, icuPattern(sk)); }
      const dp = icuPattern(date);
      for (const f of "ahm") {
        const ip = info.pat[f];
        if (ip && !ip.fallback) setPat(f, fill("{1}, {0}", [ip.first + ip.second, dp]));
      }
    }
    return info;
  }
  function dtfFormatRange(s, x, y) {
    if (x === undefined || y === undefined) throw new TypeError("Invalid time value");
    const a = timeValue(x), b = timeValue(y), fa = dateFields(a), fb = dateFields(b);
    const diff = ["era", "year", "month", "day", "ampm", "hour", "minute", "second", "ms"].find(k => k === "ampm" ? (fa.hour >= 12) !== (fb.hour >= 12) : fa[k] !== fb[k]);
    const single = () => dtfParts(s, a).map(p => ({ ...p, source: "shared" }));
    if (!diff) return single();
    const f = { era: "G", year: "y", month: "M", day: "d", ampm: "a", hour: "h", minute: "m", second: "s", ms: "S" }[diff];
    const info = intervalInfo(s), ip = info.pat[f], fmt = (p, t) => dtfParts(s, t, tokenize(p));
    const range = p => [...fmt(p, a), { type: "literal", value: THIN }, ...fmt(p, b)];
    let parts;
    if (!ip) {
      if (fieldIgnored(s.pattern, f)) return single();
      parts = "ahmsS".includes(f) && info.date && info.time ? [...fmt(info.date, a), { type: "literal", value: ", " }, ...range(info.time)] : range(s.pattern);
    } else parts = ip.fallback ? range(ip.fallback) : [...fmt(ip.first, a), ...fmt(ip.second, b)];
    return rangeSources(parts);
  }
  // ICU marks the spans covering the first and second occurrence of repeated fields;
  // V8 tags every part inside them startRange/endRange and everything else shared.
  function rangeSources(parts) {
    const out = [];
    let pos = 0, s1a = Infinity, s1b = 0, s2a = Infinity, s2b = 0;
    for (const p of parts) {
      const last = out[out.length - 1];
      if (p.type === "literal" && last && last.type === "literal") last.value += p.value; else out.push({ type: p.type, value: p.value });
    }
    for (const p of out) { p.start = pos; pos = p.end = pos + p.value.length; }
    const fields = out.filter(p => p.type !== "literal");
    fields.forEach((p, i) => {
      const q = fields.find((g, k) => k > i && g.type === p.type);
      if (q) { s1a = Math.min(s1a, p.start); s1b = Math.max(s1b, p.end); s2a = Math.min(s2a, q.start); s2b = Math.max(s2b, q.end); }
    });
    return out.map(p => ({ type: p.type, value: p.value, source: p.start >= s1a && p.end <= s1b ? "startRange" : p.start >= s2a && p.end <= s2b ? "endRange" : "shared" }));
  }
  defineClass(DateTimeFormat, "DateTimeFormat", {
    format: { getter: s => s.bound || (s.bound = date => joinParts(dtfParts(s, timeValue(date))).replace(/\u202f/g, " ")) },
    formatToParts(s, date) { return dtfParts(s, timeValue(date)); },
    formatRange(s, x, y) {
      const parts = dtfFormatRange(s, x, y), text = joinParts(parts);
      return parts.every(p => p.source === "shared") ? text.replace(/\u202f/g, " ") : text;
    },
    formatRangeToParts(s, x, y) { return dtfFormatRange(s, x, y); },
    resolvedOptions(s) {
      const r = { locale: s.locale, calendar: "gregory", numberingSystem: "latn", timeZone: s.timeZone };
      if (s.hourCycle) Object.assign(r, { hourCycle: s.hourCycle, hour12: s.hourCycle === "h11" || s.hourCycle === "h12" });
      if (!s.dateStyle && !s.timeStyle) {
        const two = t => t.n === 2 ? "2-digit" : "numeric", text = t => t.n === 4 ? "long" : t.n === 5 ? "narrow" : "short";
        const get = (re, fn) => { const t = s.tokens.find(t => t.f && re.test(t.f)); return t && fn(t); };
        const vals = {
          weekday: get(/[Ec]/, text), era: get(/G/, text), year: get(/y/, two), month: get(/[ML]/, t => t.n <= 2 ? two(t) : text(t)), day: get(/d/, two),
          dayPeriod: get(/B/, text), hour: get(/[hHkK]/, two), minute: get(/m/, two), second: get(/s/, two), fractionalSecondDigits: get(/S/, t => t.n),
          timeZoneName: get(/[zOv]/, t => ({ z: ["short", "long"], O: ["shortOffset", "longOffset"], v: ["shortGeneric", "longGeneric"] })[t.f][t.n >= 4 ? 1 : 0]),
        };
        for (const k in vals) if (vals[k] !== undefined) r[k] = vals[k];
      }
      if (s.dateStyle) r.dateStyle = s.dateStyle;
      if (s.timeStyle) r.timeStyle = s.timeStyle;
      return r;
    },
  });

  // ---- Intl.Collator: CLDR root collation for Latin text ----------------------------
  // COLL_ORDER lists characters in primary-weight order (one distinct primary each;
  // DUCET 13 / CLDR root); COLL_SPECIAL gives characters whose collation elements are
  // not a single plain primary: char, then elements rank[.secondary][:tertiary] in
  // base 36 separated by ","; COLL_MARKS holds base-36 secondary weights of U+0300..U+0362.
  const COLL_ORDER = "\t\n\u000b\f\r \u203e_\u2017-\u2010\u2012\u2013\u2014\u2015,;:!\u00a1?\u00bf\u203d.\u00b7'\u2018\u2019\u201a\u201b\u2039\u203a\"\u201c\u201d\u201e\u201f\u00ab\u00bb()[]{}\u2016\u00a7\u00b6@*/\\&#%\u2030\u2031\u2020\u2021\u2022\u2023\u2027\u2032\u2035\u2038\u203b`\u00b4^\u00af\u00a8\u00b8\u00b0\u00a9\u00ae+\u00b1\u00f7\u00d7<=>\u00ac|\u00a6~\u2044\u00a4\u00a2$\u00a3\u00a5\u20a0\u20a1\u20a2\u20a3\u20a4\u20a5\u20a6\u20a7\u20a9\u20aa\u20ab\u20ac\u20ad\u20ae\u20af\u20b0\u20b1\u20b2\u20b3\u20b4\u20b5\u20b6\u20b7\u20b8\u20b9\u20ba\u20bb\u20bc\u20bd\u20be\u20bf0123456789abcdefghi\u0131jklmn\u014bopq\u0138rst\u0167uvwxyz\u00fe";
  const COLL_SPECIAL = "\u00a06:r;\u00aa3q:k;\u00b23i:k;\u00b33j:k;\u00b93h:k;\u00ba46:k;\u00bc3h:u,2f:u,3k:u;\u00bd3h:u,2f:u,3i:u;\u00be3j:u,2f:u,3k:u;\u00c63q:a,.7s:4,3u:a;\u00d03t:a,.7s:4;\u00d846:8,.1b;\u00df4b:4,.7s:4,4b:4;\u00e63q:4,.7s:4,3u:4;\u00f03t:4,.7s:4;\u00f846,.1b;\u01103t:8,.1l;\u01113t,.1l;\u01263x:8,.1l;\u01273x,.1l;\u01323y:a,40:a;\u01333y:4,40:4;\u013f42:8,.7s;\u014042,.7s;\u014142:8,.1l;\u014242,.1l;\u015246:a,.7s:4,3u:a;\u015346:4,.7s:4,3u:4;\u017f4b:4,.7t:4;\u2011b:r;\u2024o:4;\u2025o:4,o:4;\u2026o:4,o:4,o:4;\u20331r:4,1r:4;\u20341r:4,1r:4,1r:4;\u20361s:4,1s:4;\u20371s:4,1s:4,1s:4;\u203cj:4,j:4;\u20a84a:a,4b:4;\u21224c:k,43:k";
  const COLL_MARKS = "111013191e1m121a171n1518141f1f1o1p1q1f0y0z1f1g1g1g1g1f1r1g1g1g1g1g1s1t1u1v1w1x1c1d1g1g1g1g1y1z1g20210x1g221l1h1h1b231g1g1g1f1f1f1110160y00241f1g1g1g1f1f1f1g1g001f1f1f1g1g1g1g1f251g1g1f1g1f1f1g26271g";
  const VAR_MAX = 66.5, SYM_END = 87, DIGIT0 = 124, LETTER_BASE = 1000, HAN_BASE = 2e6;
  let COLL = null;
  function collTable() {
    if (COLL) return COLL;
    COLL = new Map();
    [...COLL_ORDER].forEach((c, i) => COLL.set(c, [[i + 1, 0x20, 2]]));
    for (const e of COLL_SPECIAL.split(";")) COLL.set(e[0], e.slice(1).split(",").map(ce => { const m = /^([0-9a-z]*)(?:\.([0-9a-z]+))?(?::([0-9a-z]+))?$/.exec(ce); return [m[1] ? parseInt(m[1], 36) : 0, m[2] ? parseInt(m[2], 36) : 0x20, m[3] ? parseInt(m[3], 36) : 2]; }));
    for (let i = 0; i < COLL_MARKS.length / 2; i++) { const w = parseInt(COLL_MARKS.substr(2 * i, 2), 36); if (w) COLL.set(String.fromCharCode(0x300 + i), [[0, w, 2]]); }
    return COLL;
  }
  function collationElements(c, table) {
    let ces = table.get(c);
    if (ces) return ces;
    const lower = c.toLowerCase();
    if (lower !== c && table.has(lower)) return table.get(lower).map(([p, s, t]) => [p, s, t === 2 ? 8 : t === 4 ? 0xa : t]);
    const cp = c.codePointAt(0), compat = c.normalize("NFKD");
    if (compat !== c) return [...compat].flatMap(ch => collationElements(ch, table)).map(([p, s, t]) => [p, s, p ? (t === 8 ? 0xa : t === 2 ? 4 : t) : t]);
    if (/[\p{Cc}\p{Cf}\p{Cs}]/u.test(c)) return [];
    if (/\p{M}/u.test(c)) return [[0, 0x120, 2]];
    if (/\p{Script=Han}/u.test(c)) return [[HAN_BASE + cp, 0x20, 2]];
    if (/[\p{L}\p{N}]/u.test(c)) { const f = c.toUpperCase().toLowerCase(), fc = [...f].length === 1 ? f.codePointAt(0) : cp; return [[LETTER_BASE + fc, 0x20, f === c || lower === c ? 2 : 8]]; }
    if (/\p{Sc}/u.test(c)) return [[SYM_END + 0.5 + cp / 4e6, 0x20, 2]];
    if (/[\p{P}\p{Z}]/u.test(c)) return [[VAR_MAX - 0.4 + cp / 4e6, 0x20, 2]];
    return [[SYM_END - 0.5 + cp / 4e6, 0x20, 2]];
  }
  const UPPER_T = new Set([8, 9, 0xa, 0xb, 0xc, 0x1d]);
  // The per-level weight lists of a string (primary, secondary, case, tertiary); cached per
  // collator so that sorting computes each string's key once.
  function sortKey(s, str) {
    let key = s.keys.get(str);
    if (key) return key;
    const table = collTable(), ces = [];
    let afterVariable = false, digits = null;
    const flush = () => {
      if (digits === null) return;
      const v = digits.replace(/^0+(?=.)/, "");
      ces.push([DIGIT0 + 1 - 1 / (v.length + 1), 0x20, 2]);
      for (const ch of v) ces.push([DIGIT0 + +ch, 0x20, 2]);
      digits = null;
    };
    for (const c of /^[\0-\x7f]*$/.test(str) ? str : str.normalize("NFD")) {
      if (s.numeric && c >= "0" && c <= "9") { digits = (digits || "") + c; continue; }
      flush();
      for (const ce of collationElements(c, table)) {
        if (s.ignorePunctuation) {
          if (ce[0] > 0 && ce[0] < VAR_MAX) { afterVariable = true; continue; }
          if (ce[0] === 0 && afterVariable) continue;
          if (ce[0] > 0) afterVariable = false;
        }
        ces.push(ce);
      }
    }
    flush();
    const upperFirst = s.caseFirst === "upper", caseBit = ce => +(UPPER_T.has(ce[2]) !== upperFirst);
    key = [[], [], [], []];
    for (const ce of ces) {
      if (ce[0]) { key[0].push(ce[0]); key[2].push(caseBit(ce)); }
      if (ce[1]) key[1].push(ce[1]);
      if (ce[0] || ce[1]) key[3].push((s.caseFirst === "false" ? 0 : caseBit(ce) * 256) + ce[2]);
    }
    if (s.keys.size > 5000) s.keys.clear();
    s.keys.set(str, key);
    return key;
  }
  function collCompare(s, x, y) {
    if (x === y) return 0;
    const a = sortKey(s, x), b = sortKey(s, y);
    const levels = s.sensitivity === "base" ? [0] : s.sensitivity === "accent" ? [0, 1] : s.sensitivity === "case" ? [0, 2] : [0, 1, 3];
    for (const l of levels) {
      const p = a[l], q = b[l], n = Math.min(p.length, q.length);
      for (let i = 0; i < n; i++) if (p[i] !== q[i]) return p[i] < q[i] ? -1 : 1;
      if (p.length !== q.length) return p.length < q.length ? -1 : 1;
    }
    return 0;
  }
  function Collator(locales, options) {
    const obj = new.target ? this : Object.create(Collator.prototype);
    const o = coerceOptions(options, "Collator"), C = "Collator", s = { kind: C };
    s.usage = getOption(o, "usage", "string", ["sort", "search"], "sort", C);
    readMatcher(o, C);
    const co = getOption(o, "collation", "string", undefined, undefined, C);
    if (co !== undefined && !/^[a-zA-Z0-9]{3,8}(-[a-zA-Z0-9]{3,8})*$/.test(co)) throw new RangeError(`Invalid collation : ${co}`);
    const kn = getOption(o, "numeric", "boolean", undefined, undefined, C);
    const kf = getOption(o, "caseFirst", "string", ["upper", "lower", "false"], undefined, C);
    const r = resolveLocale(locales, ["co", "kf", "kn"], { kn: kn === undefined ? undefined : String(kn), kf });
    s.locale = r.locale;
    s.numeric = r.kn === "true";
    s.caseFirst = r.kf || "false";
    s.sensitivity = getOption(o, "sensitivity", "string", ["base", "accent", "case", "variant"], "variant", C);
    s.ignorePunctuation = getOption(o, "ignorePunctuation", "boolean", undefined, false, C);
    s.keys = new Map();
    SLOTS.set(obj, s);
    return obj;
  }
  defineClass(Collator, "Collator", {
    compare: { getter: s => s.bound || (s.bound = (x, y) => collCompare(s, String(x), String(y))) },
    resolvedOptions(s) { return { locale: s.locale, usage: s.usage, sensitivity: s.sensitivity, ignorePunctuation: s.ignorePunctuation, collation: "default", numeric: s.numeric, caseFirst: s.caseFirst }; },
  });

  // ---- Intl.RelativeTimeFormat ----------------------------------------------------
  const RT_UNITS = ["year", "quarter", "month", "week", "day", "hour", "minute", "second"];
  // long | short | narrow unit names (one/other) and the numeric:"auto" phrases for -1, 0, 1
  const RT_NAMES = { year: ["year", "yr.", "y"], quarter: ["quarter", "qtr./qtrs.", "q"], month: ["month", "mo.", "mo"], week: ["week", "wk.", "w"], day: ["day", "day/days", "d"], hour: ["hour", "hr.", "h"], minute: ["minute", "min.", "m"], second: ["second", "sec.", "s"] };
  const RT_AUTO = { year: ["last year|this year|next year", "last yr.|this yr.|next yr."], quarter: ["last quarter|this quarter|next quarter", "last qtr.|this qtr.|next qtr."], month: ["last month|this month|next month", "last mo.|this mo.|next mo."],
    week: ["last week|this week|next week", "last wk.|this wk.|next wk."], day: ["yesterday|today|tomorrow"], hour: ["|this hour|"], minute: ["|this minute|"], second: ["|now|"] };
  function RelativeTimeFormat(locales, options) {
    if (!new.target) throw new TypeError("Constructor Intl.RelativeTimeFormat requires 'new'");
    const o = coerceOptions(options, "RelativeTimeFormat"), C = "RelativeTimeFormat", s = { kind: C };
    readMatcher(o, C);
    const nu = readNumberingSystem(o, C);
    s.locale = resolveLocale(locales, ["nu"], { nu }).locale;
    s.style = getOption(o, "style", "string", ["long", "short", "narrow"], "long", C);
    s.numeric = getOption(o, "numeric", "string", ["always", "auto"], "always", C);
    s.nf = SLOTS.get(new NumberFormat("en-US"));
    SLOTS.set(this, s);
  }
  function rtfParts(s, value, unit) {
    value = +value;
    unit = String(unit);
    const u = unit.endsWith("s") ? unit.slice(0, -1) : unit;
    if (!RT_UNITS.includes(u)) throw new RangeError(`Invalid unit argument for format() '${unit}'`);
    if (!isFinite(value)) throw new RangeError("Value need to be finite number for Intl.RelativeTimeFormat.prototype.format()");
    const neg = value < 0 || Object.is(value, -0);
    if (s.numeric === "auto" && (value === -1 || value === 0 || value === 1)) {
      const phrases = RT_AUTO[u][s.style === "long" ? 0 : RT_AUTO[u].length - 1].split("|"), ph = phrases[neg && value === 0 ? 1 : value + 1];
      if (ph) return [{ type: "literal", value: ph }];
    }
    const p = numberPieces(s.nf, Math.abs(value)), names = RT_NAMES[u][s.style === "long" ? 0 : s.style === "short" ? 1 : 2].split("/");
    const name = p.one ? names[0] : s.style === "long" ? names[0] + "s" : names[1] || names[0];
    const label = (s.style === "narrow" ? "" : " ") + name, num = p.num.map(q => ({ ...q, unit: u }));
    return neg ? [...num, { type: "literal", value: label + " ago" }] : [{ type: "literal", value: "in " }, ...num, { type: "literal", value: label }];
  }
  defineClass(RelativeTimeFormat, "RelativeTimeFormat", {
    format(s, v, u) { return joinParts(rtfParts(s, v, u)); },
    formatToParts(s, v, u) { return rtfParts(s, v, u); },
    resolvedOptions(s) { return { locale: s.locale, style: s.style, numeric: s.numeric, numberingSystem: "latn" }; },
  });

  // ---- Intl.ListFormat -------------------------------------------------------------
  function ListFormat(locales, options) {
    if (!new.target) throw new TypeError("Constructor Intl.ListFormat requires 'new'");
    const o = optionsObject(options), C = "ListFormat", s = { kind: C };
    readMatcher(o, C);
    s.locale = resolveLocale(locales, []).locale;
    s.type = getOption(o, "type", "string", ["conjunction", "disjunction", "unit"], "conjunction", C);
    s.style = getOption(o, "style", "string", ["long", "short", "narrow"], "long", C);
    SLOTS.set(this, s);
  }
  function listParts(s, list) {
    const items = [];
    if (list !== undefined) for (const v of list) { if (typeof v !== "string") throw new TypeError(`Iterable yielded ${typeof v === "symbol" ? "Symbol()" : String(v)} which is not a string`); items.push(v); }
    const n = items.length, el = v => ({ type: "element", value: v }), lit = v => ({ type: "literal", value: v });
    if (n === 0) return [];
    if (n === 1) return [el(items[0])];
    let two, last, mid = ", ";
    if (s.type === "conjunction") { const w = s.style === "long" ? "and" : s.style === "short" ? "&" : null; two = w ? ` ${w} ` : ", "; last = w ? `, ${w} ` : ", "; }
    else if (s.type === "disjunction") { two = " or "; last = ", or "; }
    else { two = last = mid = s.style === "narrow" ? " " : ", "; }
    const out = [el(items[0])];
    for (let i = 1; i < n; i++) out.push(lit(n === 2 ? two : i === n - 1 ? last : mid), el(items[i]));
    return out;
  }
  defineClass(ListFormat, "ListFormat", {
    format(s, list) { return joinParts(listParts(s, list)); },
    formatToParts(s, list) { return listParts(s, list); },
    resolvedOptions(s) { return { locale: s.locale, type: s.type, style: s.style }; },
  });

  // ---- class plumbing and the Intl namespace -----------------------------------------
  function defineClass(Ctor, name, methods) {
    const proto = Ctor.prototype;
    for (const [key, m] of Object.entries(methods)) {
      if (typeof m === "function") {
        const fn = { [key](...args) { return m(internal(this, name, key), ...args); } }[key];
        Object.defineProperty(proto, key, { value: fn, writable: true, configurable: true, enumerable: false });
      } else {
        const get = { [`get ${key}`]() { return m.getter(internal(this, name, key)); } }[`get ${key}`];
        Object.defineProperty(proto, key, { get, configurable: true, enumerable: false });
      }
    }
    Object.defineProperty(proto, Symbol.toStringTag, { value: `Intl.${name}`, configurable: true });
    Object.defineProperty(Ctor, "supportedLocalesOf", { value: { supportedLocalesOf: (locales, options) => supportedLocalesOf(locales, options) }.supportedLocalesOf, writable: true, configurable: true });
    Object.defineProperty(Ctor, "prototype", { writable: false, enumerable: false, configurable: false });
  }
  const SUPPORTED = {
    calendar: ["gregory"], collation: [], currency: Object.keys(CUR).sort(), numberingSystem: ["latn"], timeZone: ["UTC"],
    unit: Object.keys(UNITS).sort(),
  };
  const Intl = {};
  Object.defineProperty(Intl, Symbol.toStringTag, { value: "Intl", configurable: true });
  const define = (k, v) => Object.defineProperty(Intl, k, { value: v, writable: true, configurable: true, enumerable: false });
  define("getCanonicalLocales", function getCanonicalLocales(locales) { return canonicalizeLocaleList(locales); });
  define("supportedValuesOf", function supportedValuesOf(key) {
    key = String(key);
    if (!Object.hasOwn(SUPPORTED, key)) throw new RangeError(`Invalid key : ${key}`);
    return SUPPORTED[key].slice();
  });
  define("DateTimeFormat", DateTimeFormat);
  define("NumberFormat", NumberFormat);
  define("Collator", Collator);
  define("PluralRules", PluralRules);
  define("RelativeTimeFormat", RelativeTimeFormat);
  define("ListFormat", ListFormat);
  return { Intl };
})
