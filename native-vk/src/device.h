// The addon's Device object: buffers, pipelines and recorded command sequences on one Vulkan
// device, addressed from JS by small integer ids. Model logic lives in TypeScript; this is the
// thin, checked execution layer underneath it.
#pragma once
#include <napi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "context.h"
#include "pipeline.h"

namespace q36 {

class Device : public Napi::ObjectWrap<Device> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit Device(const Napi::CallbackInfo& info);
  ~Device() override;

 private:
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value CreateBuffer(const Napi::CallbackInfo& info);
  Napi::Value CreateView(const Napi::CallbackInfo& info);
  Napi::Value ImportFile(const Napi::CallbackInfo& info);
  Napi::Value FreeBuffer(const Napi::CallbackInfo& info);
  Napi::Value Write(const Napi::CallbackInfo& info);
  Napi::Value Mapped(const Napi::CallbackInfo& info);
  Napi::Value CopyRegions(const Napi::CallbackInfo& info);
  Napi::Value Read(const Napi::CallbackInfo& info);
  Napi::Value CreatePipeline(const Napi::CallbackInfo& info);
  Napi::Value PipelineStats(const Napi::CallbackInfo& info);
  Napi::Value Record(const Napi::CallbackInfo& info);
  Napi::Value Run(const Napi::CallbackInfo& info);
  Napi::Value RunSync(const Napi::CallbackInfo& info);
  Napi::Value FreeCommand(const Napi::CallbackInfo& info);
  Napi::Value Timings(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);

  Context& ctx(const Napi::Env& env);
  Buffer& buffer(const Napi::Env& env, uint32_t id);
  void copy(Buffer& dst, uint64_t dstOff, Buffer& src, uint64_t srcOff, uint64_t n);
  void copyRegions(Buffer& dst, Buffer& src, const std::vector<VkBufferCopy>& regions);

  std::unique_ptr<Context> ctx_;
  std::map<uint32_t, std::unique_ptr<Buffer>> buffers_;
  // views: byte ranges of buffers, usable as bindings (a parent cannot be freed while it has views)
  struct View { uint32_t parent; uint64_t offset, size; };
  std::map<uint32_t, View> views_;
  std::map<uint32_t, std::unique_ptr<Pipeline>> pipelines_;
  std::map<uint32_t, std::unique_ptr<Recorder>> commands_;
  std::unique_ptr<Buffer> staging_;
  uint32_t next_ = 1;
  bool busy_ = false;
  friend class RunWorker;
};

}  // namespace q36
