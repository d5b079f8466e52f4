const UNITS = {
    s: 1000,
    m: 60_000,
    h: 3_600_000,
    d: 86_400_000,
    w: 604_800_000,
};
/** `90s`, `30m`, `12h`, `30d`, `2w` in milliseconds; null when the text is not such a duration. */
export function parseDuration(text) {
    const m = /^([1-9][0-9]{0,6})([smhdw])$/.exec(text);
    return m ? Number(m[1]) * UNITS[m[2]] : null;
}
//# sourceMappingURL=duration.js.map