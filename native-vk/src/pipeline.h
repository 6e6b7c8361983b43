// Compute pipelines built from the embedded SPIR-V, device buffers, and the single dispatch choke
// point: every dispatch goes through Recorder::dispatch, which checks binding counts and
// push-constant sizes against what the pipeline was declared with.
#pragma once
#include <vulkan/vulkan.h>
#include <cstdint>
#include <string>
#include <vector>

#include "context.h"

namespace q36 {

class Buffer {
 public:
  // Host-visible + coherent when `hostVisible`, else device-local.
  Buffer(Context& ctx, uint64_t size, bool hostVisible);
  // Zero-copy: bytes [offset, offset + size) of a file mapped copy-on-write into this process and
  // imported as the buffer's memory (VK_EXT_external_memory_host), so the GPU reads the page cache
  // itself. offset must be a multiple of the import alignment; size is rounded up to it (a tail
  // past the end of the file reads as zeros). Never written by the GPU.
  Buffer(Context& ctx, const std::string& path, uint64_t offset, uint64_t size);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  VkBuffer handle() const { return buf_; }
  uint64_t size() const { return size_; }
  void* mapped() const { return mapped_; }
  bool imported() const { return hostMap_ != nullptr; }

 private:
  Context& ctx_;
  VkBuffer buf_ = VK_NULL_HANDLE;
  VkDeviceMemory mem_ = VK_NULL_HANDLE;
  uint64_t size_;
  void* mapped_ = nullptr;
  // the host mapping behind an imported buffer (unmapped after the memory is freed)
  void* hostMap_ = nullptr;
  uint64_t hostMapBytes_ = 0;
};

// A storage-buffer binding: a whole buffer, or a view (a byte range of one, see Device::createView).
struct Binding {
  const Buffer* buf;
  uint64_t offset;
  uint64_t range;  // VK_WHOLE_SIZE for the whole buffer
};

// Registers a SPIR-V module by name beside the embedded ones, with its reflected interface
// (bindings, push-constant bytes, workgroup size, buffers of each binding): pipelines of that name
// are then made from it. The same name again with the same words is a no-op; with other words, or
// an embedded name, an error.
void addShader(const std::string& name, std::vector<uint32_t> words, uint32_t bindings, uint32_t push, const uint32_t local[3], const std::vector<uint32_t>& counts);

class Pipeline {
 public:
  // counts: descriptors of each binding (an array of buffers: its length, else 1; empty: 1 each),
  // checked against the module's own for the bindings it uses; captureStats: keep the compiler's
  // statistics for statistics() (needs ctx.executableStats())
  Pipeline(Context& ctx, const std::string& shader, uint32_t bindings, std::vector<uint32_t> counts, uint32_t pushBytes, bool captureStats = false);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  const std::string& name() const { return name_; }
  uint32_t bindings() const { return bindings_; }
  uint32_t descriptors() const { return descriptors_; }
  // descriptors of binding i (an array binding's length, else 1)
  uint32_t count(uint32_t i) const { return counts_[i]; }
  uint32_t pushBytes() const { return pushBytes_; }
  VkPipeline handle() const { return pipe_; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout setLayout() const { return setLayout_; }
  // (statistic name, value as text) of every executable the driver reports
  std::vector<std::pair<std::string, std::string>> statistics() const;

 private:
  void release();
  Context& ctx_;
  std::string name_;
  uint32_t bindings_, descriptors_, pushBytes_;
  std::vector<uint32_t> counts_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipe_ = VK_NULL_HANDLE;
};

// Records dispatches into one command buffer. It can be submitted any number of times: a model
// step is recorded once per shape and replayed, its per-step inputs living in buffers.
class Recorder {
 public:
  // With `profile`, a timestamp is written after every dispatch (see timings()). maxDescriptors:
  // buffers all the dispatches bind together (the descriptor pool's size).
  Recorder(Context& ctx, uint32_t maxSets, uint32_t maxDescriptors, bool profile = false);
  // GPU nanoseconds of each dispatch in the last run (profiled recorders only).
  std::vector<double> timings();
  // Finishes recording (adds the final host-visibility barrier).
  void end();
  // Submits the recorded commands and waits for them (end() first).
  void run();
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  void dispatch(const Pipeline& p, const std::vector<Binding>& buffers, const void* push, uint32_t pushBytes,
                uint32_t gx, uint32_t gy = 1, uint32_t gz = 1);
  // Makes all earlier writes visible to later dispatches.
  void barrier();
  // Ends, submits, waits for completion.
  void submitAndWait();

 private:
  Context& ctx_;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  uint32_t maxQueries_ = 0, usedQueries_ = 0;
};

}  // namespace q36
