/** What the grammar benchmarks feed: a document of fixtures/grammar/schema-50-props.json, a 100-tool set. */

/** A document of schema-50-props.json as a model would write it (pretty-printed, two-space indent). */
export function fiftyPropsDoc(): string {
  const v: Record<string, unknown> = {};
  for (let i = 0; i < 50; i++) v[`field_${i}`] = [`The quick brown fox number ${i} jumps over the lazy dog.`, 1234 * i, i % 2 === 0, 'medium', [1.5, -2, 3.25]][i % 5];
  return JSON.stringify(v, null, 2);
}

/** 100 tools of 8 parameters each, with descriptions: about 100 KB of schema, as agent harnesses send. */
export function hundredTools(): { type: string; function: { name: string; description: string; parameters: unknown } }[] {
  const tools = [];
  for (let t = 0; t < 100; t++) {
    const properties: Record<string, unknown> = {};
    for (let p = 0; p < 8; p++) {
      properties[`arg_${p}`] = [
        { type: 'string', description: `The ${p}th argument of tool ${t}: ${'a path, a pattern or free text; '.repeat(2)}` },
        { type: 'integer', minimum: 0, description: 'a count' },
        { type: 'boolean', description: 'a switch' },
        { type: 'array', items: { type: 'string' }, description: 'a list of names' },
      ][p % 4];
    }
    tools.push({ type: 'function', function: { name: `tool_${t}`, description: `Tool number ${t}. ${'It does one thing well. '.repeat(4)}`, parameters: { type: 'object', properties, required: ['arg_0'] } } });
  }
  return tools;
}
