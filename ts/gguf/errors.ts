/** Every problem with a GGUF file is a GgufError whose message names the file and the problem. */
export class GgufError extends Error {
  constructor(readonly file: string, readonly problem: string) {
    super(`${file}: ${problem}`);
    this.name = 'GgufError';
  }
}
