/**
 * Help text as a terminal and a pipe both want it: plain (no colour codes), at most 100 columns,
 * one-letter flags shown as -x. Every command prints its help through wrapHelp; q36's option list is
 * built from its citty argument table (optionsHelp) instead of citty's coloured usage.
 */
export const HELP_WIDTH = 100;

/** Lines longer than `width` broken at spaces; continuations indented two past the line's own indent. */
export function wrapHelp(text: string, width = HELP_WIDTH): string {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line.length <= width) { out.push(line); continue; }
    const indent = ' '.repeat((/^ */.exec(line)![0].length) + 2);
    let rest = line;
    while (rest.length > width) {
      // a break point past the leading spaces (a word longer than the line stays whole)
      const lead = /^ */.exec(rest)![0].length;
      let cut = rest.lastIndexOf(' ', width);
      if (cut <= lead) cut = rest.indexOf(' ', width);
      if (cut <= lead) break;
      out.push(rest.slice(0, cut).trimEnd());
      rest = indent + rest.slice(cut + 1).trimStart();
    }
    out.push(rest);
  }
  return out.join('\n');
}

interface ArgDef { type: string; alias?: string; description?: string; default?: unknown }

/** "  -m, --model VALUE   description (default: …)" for each argument, flags first. */
export function optionsHelp(args: Record<string, ArgDef>): string {
  const rows = Object.entries(args).map(([name, d]) => {
    const short = d.alias ? `-${d.alias}, ` : name.length === 1 ? '' : '    ';
    const flag = name.length === 1 && !d.alias ? `-${name}` : `--${name}`;
    const head = `  ${short}${flag}${d.type === 'string' ? ' VALUE' : ''}`;
    const dflt = d.default !== undefined && d.default !== false ? ` (default: ${String(d.default)})` : '';
    return { head, text: `${d.description ?? ''}${dflt}` };
  });
  const w = Math.min(34, Math.max(...rows.map((r) => r.head.length)) + 2), pad = ' '.repeat(w);
  // the description wrapped into its column, continuations under its first word
  const column = (t: string) => wrapHelp(`${pad}${t}`, HELP_WIDTH).split('\n').map((l, i) => (i === 0 ? l : pad + l.trimStart())).join('\n');
  return rows.map((r) => (r.head.length + 2 > w ? `${r.head}\n${column(r.text)}` : r.head.padEnd(w) + column(r.text).slice(w))).join('\n');
}
