// N-API surface of the Vulkan backend. Argument checking lives in TypeScript; here every C++
// exception becomes a JS exception (sync calls) or a rejected promise (async workers).
#include <napi.h>

#include "context.h"
#include "device.h"
#include "pipeline.h"
#include "spirv.h"

namespace {

Napi::Value ListDevices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    auto devs = q36::Context::listDevices();
    Napi::Array out = Napi::Array::New(env, devs.size());
    for (size_t i = 0; i < devs.size(); i++) {
      const auto& d = devs[i];
      Napi::Object o = Napi::Object::New(env);
      o.Set("index", d.index);
      o.Set("name", d.name);
      o.Set("type", d.type);
      o.Set("driver", d.driver);
      o.Set("apiVersion", std::to_string(VK_API_VERSION_MAJOR(d.apiVersion)) + "." + std::to_string(VK_API_VERSION_MINOR(d.apiVersion)) + "." + std::to_string(VK_API_VERSION_PATCH(d.apiVersion)));
      o.Set("vendorId", d.vendorId);
      o.Set("subgroupSize", d.subgroupSize);
      o.Set("subgroupOps", d.subgroupOps);
      o.Set("maxStorageBufferRange", static_cast<double>(d.maxStorageBufferRange));
      o.Set("maxWorkGroupInvocations", d.maxComputeWorkGroupInvocations);
      o.Set("unifiedMemory", d.unifiedMemory);
      o.Set("externalMemoryHost", d.externalMemoryHost);
      o.Set("storage8bit", d.storage8bit);
      o.Set("storage16bit", d.storage16bit);
      o.Set("float16", d.float16);
      o.Set("int8", d.int8);
      o.Set("integerDot", d.integerDot);
      o.Set("integerDotAccelerated", d.integerDotAccelerated);
      o.Set("coopmat", d.coopmat);
      o.Set("coopmatShapes", d.coopmatShapes);
      Napi::Array heaps = Napi::Array::New(env, d.heaps.size());
      for (size_t h = 0; h < d.heaps.size(); h++) {
        Napi::Object ho = Napi::Object::New(env);
        ho.Set("size", static_cast<double>(d.heaps[h].size));
        ho.Set("deviceLocal", d.heaps[h].deviceLocal);
        heaps.Set(h, ho);
      }
      o.Set("heaps", heaps);
      out.Set(i, o);
    }
    return out;
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

Napi::Value ShaderNames(const Napi::CallbackInfo& info) {
  Napi::Array out = Napi::Array::New(info.Env(), kEmbeddedShaderCount);
  for (size_t i = 0; i < kEmbeddedShaderCount; i++) out.Set(i, kEmbeddedShaders[i].name);
  return out;
}

// shaders() → [{name, bindings, push, local: [x, y, z], counts}]: each module's reflected
// interface (counts: buffers of each binding, 0 where the optimizer dropped it)
Napi::Value Shaders(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env, kEmbeddedShaderCount);
  for (size_t i = 0; i < kEmbeddedShaderCount; i++) {
    const auto& s = kEmbeddedShaders[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", s.name);
    o.Set("bindings", s.bindings);
    o.Set("push", s.push);
    Napi::Array l = Napi::Array::New(env, 3);
    for (uint32_t k = 0; k < 3; k++) l.Set(k, s.local[k]);
    o.Set("local", l);
    Napi::Array c = Napi::Array::New(env, s.bindings);
    for (uint32_t k = 0; k < s.bindings; k++) c.Set(k, s.counts[k]);
    o.Set("counts", c);
    out.Set(i, o);
  }
  return out;
}

// addShader(name, words: Uint32Array, bindings, pushBytes, local: [x, y, z], counts: number[]):
// a SPIR-V module of an experiment or a test, beside the embedded ones (pipeline.h addShader)
Napi::Value AddShader(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 6 || !info[0].IsString() || !info[1].IsTypedArray() || !info[2].IsNumber() || !info[3].IsNumber() || !info[4].IsArray() || !info[5].IsArray())
    throw Napi::TypeError::New(env, "addShader(name, words: Uint32Array, bindings, pushBytes, local: [x, y, z], counts: number[]) expected");
  auto ta = info[1].As<Napi::TypedArray>();
  if (ta.TypedArrayType() != napi_uint32_array) throw Napi::TypeError::New(env, "addShader: words must be a Uint32Array");
  auto words = info[1].As<Napi::Uint32Array>();
  std::vector<uint32_t> w(words.Data(), words.Data() + words.ElementLength());
  auto la = info[4].As<Napi::Array>(), ca = info[5].As<Napi::Array>();
  if (la.Length() != 3) throw Napi::TypeError::New(env, "addShader: local must be [x, y, z]");
  uint32_t local[3];
  for (uint32_t k = 0; k < 3; k++) local[k] = la.Get(k).As<Napi::Number>().Uint32Value();
  std::vector<uint32_t> counts(ca.Length());
  for (uint32_t k = 0; k < ca.Length(); k++) counts[k] = ca.Get(k).As<Napi::Number>().Uint32Value();
  try {
    q36::addShader(info[0].As<Napi::String>().Utf8Value(), std::move(w), info[2].As<Napi::Number>().Uint32Value(), info[3].As<Napi::Number>().Uint32Value(), local, counts);
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
  return env.Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("listDevices", Napi::Function::New(env, ListDevices));
  exports.Set("shaderNames", Napi::Function::New(env, ShaderNames));
  exports.Set("shaders", Napi::Function::New(env, Shaders));
  exports.Set("addShader", Napi::Function::New(env, AddShader));
  exports.Set("Device", q36::Device::Define(env));
  return exports;
}

}  // namespace

NODE_API_MODULE(q36vk, Init)
