// Minimal SPIR-V reflection for build-shaders.mjs: the descriptor bindings (set 0) and their array lengths, the push-
// constant block's size and the workgroup size a compute module declares, read from the module
// itself so the addon can check what the TypeScript side binds and pushes against the shader.
// Handles what our shaders use: 32-bit scalars, vectors and arrays in the push block (a type it does
// not follow has no size: a push block made of one would read NaN, and build-shaders refuses it).
const OP = { Name: 5, ExecutionMode: 16, TypeInt: 21, TypeFloat: 22, TypeVector: 23, TypeArray: 28, TypeStruct: 30, TypePointer: 32, Constant: 43, Variable: 59, Decorate: 71, MemberDecorate: 72 };
const DEC = { Binding: 33, Offset: 35 };
const SC = { PushConstant: 9 };
const LOCAL_SIZE = 17;

export function reflect(words) {
  if (words[0] !== 0x07230203) throw new Error('not a SPIR-V module');
  const binding = new Map(), offsets = new Map(), types = new Map(), consts = new Map(), pointers = new Map();
  const vars = [];
  let local = [1, 1, 1];
  for (let i = 5; i < words.length;) {
    const n = words[i] >>> 16, op = words[i] & 0xffff, a = words.subarray(i + 1, i + n);
    if (n === 0) throw new Error('malformed SPIR-V');
    switch (op) {
      case OP.ExecutionMode: if (a[1] === LOCAL_SIZE) local = [a[2], a[3], a[4]]; break;
      case OP.Decorate: if (a[1] === DEC.Binding) binding.set(a[0], a[2]); break;
      case OP.MemberDecorate: if (a[2] === DEC.Offset) { const m = offsets.get(a[0]) ?? []; m[a[1]] = a[3]; offsets.set(a[0], m); } break;
      case OP.TypeInt: case OP.TypeFloat: types.set(a[0], { bytes: a[1] / 8 }); break;
      // (a vector of a type not followed here, booleans: no size)
      case OP.TypeVector: types.set(a[0], { bytes: (types.get(a[1])?.bytes ?? NaN) * a[2] }); break;
      // an array of a type not followed here (a cooperative matrix in registers): its length only
      case OP.TypeArray: types.set(a[0], { bytes: (types.get(a[1])?.bytes ?? NaN) * consts.get(a[2]), count: consts.get(a[2]) }); break;
      case OP.TypeStruct: types.set(a[0], { members: Array.from(a.subarray(1)) }); break;
      case OP.Constant: consts.set(a[1], a[2]); break;
      case OP.TypePointer: pointers.set(a[0], { sc: a[1], type: a[2] }); break;
      case OP.Variable: vars.push({ id: a[1], sc: a[2], ptr: a[0] }); break;
    }
    i += n;
  }
  let push = 0;
  for (const v of vars) {
    if (v.sc !== SC.PushConstant) continue;
    const st = pointers.get(v.ptr).type, t = types.get(st), offs = offsets.get(st) ?? [];
    t.members.forEach((m, k) => { push = Math.max(push, (offs[k] ?? 0) + types.get(m).bytes); });
  }
  const ids = [...binding.values()];
  const bindings = ids.length ? Math.max(...ids) + 1 : 0;
  // descriptors of each binding: an array of buffers (the batched step's per-row bindings) has
  // its length, anything else 1; 0 for a binding below the highest that the optimizer dropped
  const counts = Array.from({ length: bindings }, () => 0);
  for (const v of vars) if (binding.has(v.id)) counts[binding.get(v.id)] = types.get(pointers.get(v.ptr).type)?.count ?? 1;
  return { bindings, push, local, counts };
}
