#include "device.h"

#include <cstring>
#include <stdexcept>

#include "vk_check.h"

namespace q36 {

namespace {
constexpr uint64_t kStagingBytes = 64ull << 20;

uint32_t u32(const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": number expected");
  return v.As<Napi::Number>().Uint32Value();
}
double num(const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": number expected");
  return v.As<Napi::Number>().DoubleValue();
}
}  // namespace

Napi::Function Device::Define(Napi::Env env) {
  return DefineClass(env, "Device", {
    InstanceMethod("info", &Device::Info),
    InstanceMethod("createBuffer", &Device::CreateBuffer),
    InstanceMethod("createView", &Device::CreateView),
    InstanceMethod("importFile", &Device::ImportFile),
    InstanceMethod("freeBuffer", &Device::FreeBuffer),
    InstanceMethod("write", &Device::Write),
    InstanceMethod("mapped", &Device::Mapped),
    InstanceMethod("copyRegions", &Device::CopyRegions),
    InstanceMethod("read", &Device::Read),
    InstanceMethod("createPipeline", &Device::CreatePipeline),
    InstanceMethod("pipelineStats", &Device::PipelineStats),
    InstanceMethod("record", &Device::Record),
    InstanceMethod("run", &Device::Run),
    InstanceMethod("runSync", &Device::RunSync),
    InstanceMethod("freeCommand", &Device::FreeCommand),
    InstanceMethod("timings", &Device::Timings),
    InstanceMethod("dispose", &Device::Dispose),
  });
}

Device::Device(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Device>(info) {
  int index = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : -1;
  try {
    ctx_ = std::make_unique<Context>(index);
    staging_ = std::make_unique<Buffer>(*ctx_, kStagingBytes, true);
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

Device::~Device() {
  commands_.clear();
  pipelines_.clear();
  views_.clear();
  buffers_.clear();
  staging_.reset();
  ctx_.reset();
}

Context& Device::ctx(const Napi::Env& env) {
  if (!ctx_) throw Napi::Error::New(env, "Vulkan device is disposed");
  if (busy_) throw Napi::Error::New(env, "Vulkan device is busy: await the previous run() first");
  return *ctx_;
}

Buffer& Device::buffer(const Napi::Env& env, uint32_t id) {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) throw Napi::Error::New(env, "unknown buffer id " + std::to_string(id));
  return *it->second;
}

Napi::Value Device::Info(const Napi::CallbackInfo& info) {
  const auto& d = ctx(info.Env()).info();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("name", d.name);
  o.Set("type", d.type);
  o.Set("driver", d.driver);
  o.Set("subgroupSize", d.subgroupSize);
  o.Set("subgroupOps", d.subgroupOps);
  o.Set("subgroupFeatures", d.subgroupFeatures);
  o.Set("maxComputeSharedMemorySize", d.maxComputeSharedMemorySize);
  o.Set("maxStorageBufferRange", static_cast<double>(d.maxStorageBufferRange));
  o.Set("unifiedMemory", d.unifiedMemory);
  o.Set("minStorageBufferOffsetAlignment", static_cast<double>(d.minStorageBufferOffsetAlignment));
  o.Set("externalMemoryHost", d.externalMemoryHost);
  o.Set("integerDot", d.integerDot);
  o.Set("integerDotAccelerated", d.integerDotAccelerated);
  o.Set("float16", d.float16);
  o.Set("coopmat", d.coopmat);
  o.Set("coopmatShapes", d.coopmatShapes);
  o.Set("cooperativeMatrix", d.cooperativeMatrix);
  o.Set("sharedBlocks", d.sharedBlocks);
  o.Set("bufferArrays", d.bufferArrays);
  o.Set("maxStageStorageBuffers", d.maxStageStorageBuffers);
  o.Set("importAlignment", static_cast<double>(d.importAlignment));
  uint64_t local = 0;
  for (auto& h : d.heaps) if (h.deviceLocal) local += h.size;
  o.Set("deviceLocalBytes", static_cast<double>(local));
  // read now (it changes with what this and other processes hold): 0 without VK_EXT_memory_budget
  o.Set("memoryBudgetBytes", static_cast<double>(ctx(info.Env()).memoryBudget()));
  return o;
}

// createBuffer(bytes, hostVisible) → id
Napi::Value Device::CreateBuffer(const Napi::CallbackInfo& info) {
  Context& c = ctx(info.Env());
  uint64_t bytes = static_cast<uint64_t>(num(info[0], "createBuffer(bytes)"));
  bool host = info.Length() > 1 && info[1].ToBoolean();
  if (bytes > c.info().maxStorageBufferRange)
    throw Napi::RangeError::New(info.Env(), "buffer of " + std::to_string(bytes) + " bytes exceeds maxStorageBufferRange " + std::to_string(c.info().maxStorageBufferRange));
  try {
    uint32_t id = next_++;
    buffers_[id] = std::make_unique<Buffer>(c, (bytes + 3) & ~3ull, host);
    return Napi::Number::New(info.Env(), id);
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

// importFile(path, offset, bytes) → id: a read-only buffer whose memory is the file range itself
// (zero-copy weights, see Buffer's import constructor); bind parts of it through createView.
Napi::Value Device::ImportFile(const Napi::CallbackInfo& info) {
  Context& c = ctx(info.Env());
  if (!info[0].IsString()) throw Napi::TypeError::New(info.Env(), "importFile(path): string expected");
  uint64_t off = static_cast<uint64_t>(num(info[1], "importFile(offset)")), bytes = static_cast<uint64_t>(num(info[2], "importFile(bytes)"));
  try {
    uint32_t id = next_++;
    buffers_[id] = std::make_unique<Buffer>(c, info[0].As<Napi::String>().Utf8Value(), off, bytes);
    return Napi::Number::New(info.Env(), id);
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

// createView(buffer, offset, bytes) → id: a byte range of a buffer, bound like a buffer in record()
// (so one dispatch's output can feed several consumers that each expect their own buffer).
Napi::Value Device::CreateView(const Napi::CallbackInfo& info) {
  Context& c = ctx(info.Env());
  uint32_t parent = u32(info[0], "createView(buffer)");
  uint64_t off = static_cast<uint64_t>(num(info[1], "createView(offset)")), bytes = static_cast<uint64_t>(num(info[2], "createView(bytes)"));
  const Buffer& b = buffer(info.Env(), parent);
  uint64_t align = c.info().minStorageBufferOffsetAlignment;
  if (align && off % align != 0)
    throw Napi::RangeError::New(info.Env(), "createView: offset " + std::to_string(off) + " is not a multiple of minStorageBufferOffsetAlignment " + std::to_string(align));
  if (bytes == 0 || off + bytes > b.size())
    throw Napi::RangeError::New(info.Env(), "createView: range " + std::to_string(off) + "+" + std::to_string(bytes) + " is outside the buffer (" + std::to_string(b.size()) + " bytes)");
  uint32_t id = next_++;
  views_[id] = {parent, off, bytes};
  return Napi::Number::New(info.Env(), id);
}

Napi::Value Device::FreeBuffer(const Napi::CallbackInfo& info) {
  ctx(info.Env());
  uint32_t id = u32(info[0], "freeBuffer(id)");
  if (views_.erase(id)) return info.Env().Undefined();
  for (auto& v : views_)
    if (v.second.parent == id) throw Napi::Error::New(info.Env(), "freeBuffer: buffer " + std::to_string(id) + " still has views");
  buffers_.erase(id);
  return info.Env().Undefined();
}

void Device::copy(Buffer& dst, uint64_t dstOff, Buffer& src, uint64_t srcOff, uint64_t n) {
  copyRegions(dst, src, {VkBufferCopy{srcOff, dstOff, n}});
}

// One submission copying every region (then waiting for it): a whole batch of uploads costs one
// queue round trip instead of one each.
void Device::copyRegions(Buffer& dst, Buffer& src, const std::vector<VkBufferCopy>& regions) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = ctx_->commandPool();
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd;
  VK_CALL(vkAllocateCommandBuffers(ctx_->device(), &ai, &cmd));
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkBeginCommandBuffer(cmd, &bi);
  vkCmdCopyBuffer(cmd, src.handle(), dst.handle(), static_cast<uint32_t>(regions.size()), regions.data());
  vkEndCommandBuffer(cmd);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  VkResult r = vkQueueSubmit(ctx_->queue(), 1, &si, VK_NULL_HANDLE);
  if (r == VK_SUCCESS) r = vkQueueWaitIdle(ctx_->queue());
  vkFreeCommandBuffers(ctx_->device(), ctx_->commandPool(), 1, &cmd);
  if (r != VK_SUCCESS) throw VkError("vkQueueSubmit(copy)", r);
}

// mapped(id) → ArrayBuffer over a host-visible buffer's own memory (no copy): the host reads
// files straight into it (SSD streaming's stage and, on unified memory, its slots). It is valid
// until the buffer is freed; the engine drops its views before that.
Napi::Value Device::Mapped(const Napi::CallbackInfo& info) {
  ctx(info.Env());
  Buffer& b = buffer(info.Env(), u32(info[0], "mapped(id)"));
  if (!b.mapped() || b.imported()) throw Napi::Error::New(info.Env(), "mapped: not a host-visible buffer of the engine's own");
  return Napi::ArrayBuffer::New(info.Env(), b.mapped(), b.size());
}

// copyRegions(dst, src, regions: Float64Array of (dstOffset, srcOffset, bytes) triples): one
// submission copying every region from src to dst on the device.
Napi::Value Device::CopyRegions(const Napi::CallbackInfo& info) {
  ctx(info.Env());
  Buffer& d = buffer(info.Env(), u32(info[0], "copyRegions(dst)"));
  Buffer& src = buffer(info.Env(), u32(info[1], "copyRegions(src)"));
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) throw Napi::TypeError::New(info.Env(), "copyRegions(regions): Float64Array expected");
  auto ra = info[2].As<Napi::Float64Array>();
  if (ra.ElementLength() % 3 != 0) throw Napi::RangeError::New(info.Env(), "copyRegions(regions): (dstOffset, srcOffset, bytes) triples expected");
  if (d.imported()) throw Napi::Error::New(info.Env(), "copyRegions: the destination is an imported file mapping (read-only)");
  std::vector<VkBufferCopy> regions;
  for (size_t i = 0; i < ra.ElementLength(); i += 3) {
    double o = ra[i], so = ra[i + 1], len = ra[i + 2];
    if (!(o >= 0 && so >= 0 && len >= 0) || o + len > static_cast<double>(d.size()) || so + len > static_cast<double>(src.size())) throw Napi::RangeError::New(info.Env(), "copyRegions: a region lies outside a buffer");
    if (len > 0) regions.push_back(VkBufferCopy{static_cast<uint64_t>(so), static_cast<uint64_t>(o), static_cast<uint64_t>(len)});
  }
  try {
    if (!regions.empty()) copyRegions(d, src, regions);
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
  return info.Env().Undefined();
}

// write(id, byteOffset, Uint8Array)
Napi::Value Device::Write(const Napi::CallbackInfo& info) {
  ctx(info.Env());
  Buffer& b = buffer(info.Env(), u32(info[0], "write(id)"));
  uint64_t off = static_cast<uint64_t>(num(info[1], "write(offset)"));
  if (!info[2].IsTypedArray()) throw Napi::TypeError::New(info.Env(), "write(data): Uint8Array expected");
  auto ta = info[2].As<Napi::TypedArray>();
  const uint8_t* p = static_cast<const uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
  uint64_t n = ta.ByteLength();
  if (off + n > b.size()) throw Napi::RangeError::New(info.Env(), "write past the end of buffer");
  if (b.imported()) throw Napi::Error::New(info.Env(), "write: buffer is an imported file mapping (read-only)");
  try {
    if (b.mapped()) {
      std::memcpy(static_cast<uint8_t*>(b.mapped()) + off, p, n);
    } else {
      for (uint64_t done = 0; done < n;) {
        uint64_t k = std::min<uint64_t>(kStagingBytes, n - done);
        std::memcpy(staging_->mapped(), p + done, k);
        copy(b, off + done, *staging_, 0, k);
        done += k;
      }
    }
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
  return info.Env().Undefined();
}

// read(id, byteOffset, length) → ArrayBuffer
Napi::Value Device::Read(const Napi::CallbackInfo& info) {
  ctx(info.Env());
  Buffer& b = buffer(info.Env(), u32(info[0], "read(id)"));
  uint64_t off = static_cast<uint64_t>(num(info[1], "read(offset)"));
  uint64_t n = static_cast<uint64_t>(num(info[2], "read(length)"));
  if (off + n > b.size()) throw Napi::RangeError::New(info.Env(), "read past the end of buffer");
  auto out = Napi::ArrayBuffer::New(info.Env(), n);
  uint8_t* dst = static_cast<uint8_t*>(out.Data());
  try {
    if (b.mapped()) {
      std::memcpy(dst, static_cast<uint8_t*>(b.mapped()) + off, n);
    } else {
      for (uint64_t done = 0; done < n;) {
        uint64_t k = std::min<uint64_t>(kStagingBytes, n - done);
        copy(*staging_, 0, b, off + done, k);
        std::memcpy(dst + done, staging_->mapped(), k);
        done += k;
      }
    }
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
  return out;
}

// the counts argument of createPipeline / pipelineStats: buffers of each binding (an array
// binding's length, else 1); 1 each when left out
static std::vector<uint32_t> countsArg(const Napi::CallbackInfo& info) {
  std::vector<uint32_t> out;
  if (info.Length() <= 3 || info[3].IsUndefined()) return out;
  if (!info[3].IsArray()) throw Napi::TypeError::New(info.Env(), "counts: array of numbers expected");
  auto a = info[3].As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); i++) out.push_back(u32(a.Get(i), "counts[i]"));
  return out;
}

// createPipeline(shaderName, bindings, pushBytes[, counts]) → id
Napi::Value Device::CreatePipeline(const Napi::CallbackInfo& info) {
  Context& c = ctx(info.Env());
  if (!info[0].IsString()) throw Napi::TypeError::New(info.Env(), "createPipeline(name): string expected");
  try {
    uint32_t id = next_++;
    pipelines_[id] = std::make_unique<Pipeline>(c, info[0].As<Napi::String>().Utf8Value(), u32(info[1], "bindings"), countsArg(info), u32(info[2], "pushBytes"));
    return Napi::Number::New(info.Env(), id);
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

// pipelineStats(shaderName, bindings, pushBytes[, counts]) → [[statistic, value], …]: the driver's compiler
// statistics for the shader (registers, instructions, spills: whatever it reports), from a
// throwaway pipeline built with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR (kernel tuning).
Napi::Value Device::PipelineStats(const Napi::CallbackInfo& info) {
  Context& c = ctx(info.Env());
  if (!info[0].IsString()) throw Napi::TypeError::New(info.Env(), "pipelineStats(name): string expected");
  try {
    Pipeline p(c, info[0].As<Napi::String>().Utf8Value(), u32(info[1], "bindings"), countsArg(info), u32(info[2], "pushBytes"), true);
    auto st = p.statistics();
    Napi::Array out = Napi::Array::New(info.Env(), st.size());
    for (uint32_t i = 0; i < st.size(); i++) {
      Napi::Array kv = Napi::Array::New(info.Env(), 2);
      kv.Set(0u, st[i].first);
      kv.Set(1u, st[i].second);
      out.Set(i, kv);
    }
    return out;
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

// record(ops: Uint32Array) → command id. Each op: pipeline, nBuffers, buffers…, nPushWords,
// push…, gx, gy, gz, flags (bit 0: barrier after). Every dispatch goes through Recorder::dispatch.
Napi::Value Device::Record(const Napi::CallbackInfo& info) {
  Context& c = ctx(info.Env());
  if (!info[0].IsTypedArray()) throw Napi::TypeError::New(info.Env(), "record(ops): Uint32Array expected");
  auto ta = info[0].As<Napi::Uint32Array>();
  const uint32_t* w = ta.Data();
  size_t n = ta.ElementLength(), i = 0, dispatches = 0, descriptors = 0;
  for (size_t j = 0; j < n; dispatches++) {  // count to size the descriptor pool
    if (j + 2 > n) throw Napi::Error::New(info.Env(), "record: truncated op list");
    descriptors += w[j + 1];
    j += 2 + w[j + 1];
    if (j >= n) throw Napi::Error::New(info.Env(), "record: truncated op list");
    j += 1 + w[j] + 4;
  }
  try {
    bool profile = info.Length() > 1 && info[1].ToBoolean();
    auto rec = std::make_unique<Recorder>(c, static_cast<uint32_t>(dispatches + 1), static_cast<uint32_t>(descriptors + 1), profile);
    std::vector<Binding> bufs;
    while (i < n) {
      auto pit = pipelines_.find(w[i]);
      if (pit == pipelines_.end()) throw std::runtime_error("record: unknown pipeline id " + std::to_string(w[i]));
      uint32_t nb = w[i + 1];
      bufs.clear();
      for (uint32_t k = 0; k < nb; k++) {
        uint32_t id = w[i + 2 + k];
        auto vit = views_.find(id);
        auto bit = buffers_.find(vit != views_.end() ? vit->second.parent : id);
        if (bit == buffers_.end()) throw std::runtime_error(pit->second->name() + ": unknown buffer id " + std::to_string(id));
        if (vit != views_.end()) bufs.push_back({bit->second.get(), vit->second.offset, vit->second.size});
        else bufs.push_back({bit->second.get(), 0, VK_WHOLE_SIZE});
      }
      i += 2 + nb;
      uint32_t np = w[i];
      const uint32_t* push = w + i + 1;
      i += 1 + np;
      if (i + 4 > n) throw std::runtime_error("record: truncated op list");
      rec->dispatch(*pit->second, bufs, push, np * 4, w[i], w[i + 1], w[i + 2]);
      if (w[i + 3] & 1) rec->barrier();
      i += 4;
    }
    rec->end();
    uint32_t id = next_++;
    commands_[id] = std::move(rec);
    return Napi::Number::New(info.Env(), id);
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

class RunWorker : public Napi::AsyncWorker {
 public:
  RunWorker(Napi::Env env, Device* d, Recorder* r) : Napi::AsyncWorker(env), d_(d), r_(r), def_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return def_.Promise(); }
  void Execute() override {
    try { r_->run(); } catch (const std::exception& e) { SetError(e.what()); }
  }
  void OnOK() override { d_->busy_ = false; def_.Resolve(Env().Undefined()); }
  void OnError(const Napi::Error& e) override { d_->busy_ = false; def_.Reject(e.Value()); }

 private:
  Device* d_;
  Recorder* r_;
  Napi::Promise::Deferred def_;
};

// run(commandId) → Promise: submits a recorded sequence on a worker thread.
Napi::Value Device::Run(const Napi::CallbackInfo& info) {
  ctx(info.Env());
  auto it = commands_.find(u32(info[0], "run(id)"));
  if (it == commands_.end()) throw Napi::Error::New(info.Env(), "unknown command id");
  busy_ = true;
  auto* w = new RunWorker(info.Env(), this, it->second.get());
  auto p = w->promise();
  w->Queue();
  return p;
}

Napi::Value Device::RunSync(const Napi::CallbackInfo& info) {
  ctx(info.Env());
  auto it = commands_.find(u32(info[0], "runSync(id)"));
  if (it == commands_.end()) throw Napi::Error::New(info.Env(), "unknown command id");
  try { it->second->run(); } catch (const std::exception& e) { throw Napi::Error::New(info.Env(), e.what()); }
  return info.Env().Undefined();
}

// timings(commandId) → Float64Array of GPU nanoseconds per dispatch of the last run (profiled commands).
Napi::Value Device::Timings(const Napi::CallbackInfo& info) {
  ctx(info.Env());
  auto it = commands_.find(u32(info[0], "timings(id)"));
  if (it == commands_.end()) throw Napi::Error::New(info.Env(), "unknown command id");
  try {
    auto t = it->second->timings();
    auto out = Napi::Float64Array::New(info.Env(), t.size());
    for (size_t i = 0; i < t.size(); i++) out[i] = t[i];
    return out;
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

Napi::Value Device::FreeCommand(const Napi::CallbackInfo& info) {
  ctx(info.Env());
  commands_.erase(u32(info[0], "freeCommand(id)"));
  return info.Env().Undefined();
}

Napi::Value Device::Dispose(const Napi::CallbackInfo& info) {
  if (busy_) throw Napi::Error::New(info.Env(), "cannot dispose while a run is in flight");
  commands_.clear();
  pipelines_.clear();
  views_.clear();
  buffers_.clear();
  staging_.reset();
  ctx_.reset();
  return info.Env().Undefined();
}

}  // namespace q36
