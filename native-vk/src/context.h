// One Vulkan instance + logical device + compute queue: the device everything else runs on.
#pragma once
#include <vulkan/vulkan.h>
#include <cstdint>
#include <string>
#include <vector>

namespace q36 {

struct HeapInfo {
  uint64_t size;
  bool deviceLocal;
};

struct DeviceInfo {
  uint32_t index;
  std::string name;
  std::string type;  // "discrete", "integrated", "cpu", "virtual", "other"
  std::string driver;
  uint32_t apiVersion;
  uint32_t vendorId;
  uint32_t subgroupSize;
  bool subgroupOps;  // compute-stage subgroup arithmetic + vote + shuffle (the shaders need them)
  uint32_t subgroupFeatures;  // VkSubgroupFeatureFlags
  uint32_t maxComputeSharedMemorySize;
  uint64_t maxStorageBufferRange;
  uint32_t maxComputeWorkGroupInvocations;
  uint32_t maxPushConstantsSize;
  uint64_t minStorageBufferOffsetAlignment;
  bool unifiedMemory;          // a heap that is both device-local and host-visible covers most memory
  bool externalMemoryHost;     // VK_EXT_external_memory_host (zero-copy weights)
  uint64_t importAlignment;    // minImportedHostPointerAlignment (0 without the extension)
  bool storage8bit, storage16bit, float16, int8;
  bool integerDot;             // VK_KHR_shader_integer_dot_product (mvq.comp's packed 4×8-bit dot products)
  bool integerDotAccelerated;  // integerDotProduct4x8BitPackedSignedAccelerated: the packed dot runs in hardware, not emulated
  // VK_KHR_cooperative_matrix with subgroup-scope 16 × 16 × 16 f16 × f16 → f32 products,
  // shaderFloat16 and 32-lane subgroups (the engine's mmc kernels); the device's matrix-unit shapes
  // are in coopmatShapes. cooperativeMatrix: the feature at any shape (enabled on the device, so
  // checks can run other shapes' modules: mmc-check, attn-mmc-check --fragment 8)
  bool coopmat;
  bool cooperativeMatrix;
  std::string coopmatShapes;   // "MxNxK A,B->C" of every subgroup-scope shape the driver lists
  // VK_KHR_workgroup_memory_explicit_layout with 16-bit access: shared memory declared as blocks
  // that alias each other (the attn_mma experiment, scripts/experiments/attn, lays out views of one
  // 48 KiB space whose lifetimes do not overlap; the engine's kernels do not use it)
  bool sharedBlocks;
  bool bufferArrays;           // shaderStorageBufferArrayDynamicIndexing (the batched step's per-row binding arrays)
  uint32_t maxStageStorageBuffers;  // storage-buffer descriptors one compute pipeline may bind (per stage and per set, the lower)
  float timestampPeriod;  // nanoseconds per timestamp tick
  std::vector<HeapInfo> heaps;
};

class Context {
 public:
  // deviceIndex < 0 picks automatically: a real GPU first, lavapipe last.
  explicit Context(int deviceIndex);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  static std::vector<DeviceInfo> listDevices();

  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  VkCommandPool commandPool() const { return pool_; }
  const DeviceInfo& info() const { return info_; }
  // vkGetMemoryHostPointerPropertiesEXT, or null when the extension is not enabled
  PFN_vkGetMemoryHostPointerPropertiesEXT hostPointerProps() const { return hostPointerProps_; }
  // VK_KHR_pipeline_executable_properties (compiler statistics such as registers per thread, for
  // tuning kernels), or null when the device lacks it
  PFN_vkGetPipelineExecutablePropertiesKHR executableProps() const { return executableProps_; }
  PFN_vkGetPipelineExecutableStatisticsKHR executableStats() const { return executableStats_; }
  // Bytes the device-local heaps may hold now by VK_EXT_memory_budget (this process's use plus
  // what is available to it), or 0 without the extension.
  uint64_t memoryBudget() const;
  // Index of a memory type with all `want` flags among `typeBits`, or throws.
  // the first type with `want`, preferring one that also has `prefer`
  uint32_t memoryType(uint32_t typeBits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer = 0) const;

 private:
  void release();
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice phys_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  uint32_t queueFamily_ = 0;
  VkPhysicalDeviceMemoryProperties mem_{};
  DeviceInfo info_;
  PFN_vkGetMemoryHostPointerPropertiesEXT hostPointerProps_ = nullptr;
  PFN_vkGetPipelineExecutablePropertiesKHR executableProps_ = nullptr;
  PFN_vkGetPipelineExecutableStatisticsKHR executableStats_ = nullptr;
};

}  // namespace q36
