#include "context.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "coopmat.h"
#include "vk_check.h"

namespace q36 {

const char* vkResultName(VkResult r) {
  switch (r) {
#define C(x) case x: return #x;
    C(VK_SUCCESS) C(VK_NOT_READY) C(VK_TIMEOUT) C(VK_INCOMPLETE) C(VK_ERROR_OUT_OF_HOST_MEMORY)
    C(VK_ERROR_OUT_OF_DEVICE_MEMORY) C(VK_ERROR_INITIALIZATION_FAILED) C(VK_ERROR_DEVICE_LOST)
    C(VK_ERROR_MEMORY_MAP_FAILED) C(VK_ERROR_LAYER_NOT_PRESENT) C(VK_ERROR_EXTENSION_NOT_PRESENT)
    C(VK_ERROR_FEATURE_NOT_PRESENT) C(VK_ERROR_INCOMPATIBLE_DRIVER) C(VK_ERROR_TOO_MANY_OBJECTS)
    C(VK_ERROR_FORMAT_NOT_SUPPORTED) C(VK_ERROR_FRAGMENTED_POOL) C(VK_ERROR_OUT_OF_POOL_MEMORY)
    C(VK_ERROR_INVALID_EXTERNAL_HANDLE) C(VK_ERROR_UNKNOWN)
#undef C
    default: return "VkResult";
  }
}

namespace {

VkInstance createInstance() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "quarkstar";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkInstance inst;
  VK_CALL(vkCreateInstance(&ci, nullptr, &inst));
  return inst;
}

std::vector<VkPhysicalDevice> physicalDevices(VkInstance inst) {
  uint32_t n = 0;
  VK_CALL(vkEnumeratePhysicalDevices(inst, &n, nullptr));
  std::vector<VkPhysicalDevice> v(n);
  if (n) VK_CALL(vkEnumeratePhysicalDevices(inst, &n, v.data()));
  return v;
}

bool hasExtension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  for (auto& e : ext) if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

const char* componentName(VkComponentTypeKHR t) {
  switch (static_cast<int>(t)) {
    case 0: return "f16"; case 1: return "f32"; case 2: return "f64"; case 3: return "s8"; case 4: return "s16";
    case 5: return "s32"; case 6: return "s64"; case 7: return "u8"; case 8: return "u16"; case 9: return "u32";
    case 10: return "u64"; case 1000141000: return "bf16"; default: return "?";
  }
}

// The matrix-unit shapes a device lists (subgroup scope), and whether the mmc kernels' one is there.
bool coopmatShapes(VkInstance inst, VkPhysicalDevice pd, std::string& shapes) {
  auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  if (!get) return false;
  uint32_t n = 0;
  if (get(pd, &n, nullptr) != VK_SUCCESS || n == 0) return false;
  std::vector<VkCooperativeMatrixPropertiesKHR> props(n);
  for (auto& p : props) { p = {}; p.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR; }
  if (get(pd, &n, props.data()) != VK_SUCCESS) return false;
  bool found = false;
  for (uint32_t i = 0; i < n; i++) {
    const auto& p = props[i];
    if (static_cast<int>(p.scope) != 3) continue;
    if (!shapes.empty()) shapes += "; ";
    shapes += std::to_string(p.MSize) + "x" + std::to_string(p.NSize) + "x" + std::to_string(p.KSize) + " " + componentName(p.AType) + "," + componentName(p.BType) + "->" + componentName(p.ResultType);
    if (p.MSize == 16 && p.NSize == 16 && p.KSize == 16 && static_cast<int>(p.AType) == 0 && static_cast<int>(p.BType) == 0 &&
        static_cast<int>(p.CType) == 1 && static_cast<int>(p.ResultType) == 1 && !p.saturatingAccumulation) found = true;
  }
  return found;
}

DeviceInfo describe(VkInstance inst, VkPhysicalDevice pd, uint32_t index) {
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  sub.pNext = &drv;
  bool extHost = hasExtension(pd, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT hostProps{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  if (extHost) drv.pNext = &hostProps;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sub;
  vkGetPhysicalDeviceProperties2(pd, &p2);
  const auto& p = p2.properties;

  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f11;
  vkGetPhysicalDeviceFeatures2(pd, &f2);

  DeviceInfo d;
  d.index = index;
  d.name = p.deviceName;
  switch (p.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: d.type = "discrete"; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: d.type = "integrated"; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: d.type = "cpu"; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: d.type = "virtual"; break;
    default: d.type = "other";
  }
  d.driver = std::string(drv.driverName) + " " + drv.driverInfo;
  d.apiVersion = p.apiVersion;
  d.vendorId = p.vendorID;
  d.subgroupSize = sub.subgroupSize;
  // the shaders reduce with subgroupAdd/Max/Min/Any in compute (arithmetic and vote operations) and
  // deltanet_chunk sums lane quads with subgroupShuffleXor (shuffle)
  d.subgroupOps = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                  (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                  (sub.supportedOperations & VK_SUBGROUP_FEATURE_VOTE_BIT) &&
                  (sub.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  d.subgroupFeatures = sub.supportedOperations;
  d.maxComputeSharedMemorySize = p.limits.maxComputeSharedMemorySize;
  d.maxStorageBufferRange = p.limits.maxStorageBufferRange;
  d.maxComputeWorkGroupInvocations = p.limits.maxComputeWorkGroupInvocations;
  d.maxPushConstantsSize = p.limits.maxPushConstantsSize;
  d.timestampPeriod = p.limits.timestampPeriod;
  d.minStorageBufferOffsetAlignment = p.limits.minStorageBufferOffsetAlignment;
  d.externalMemoryHost = extHost;
  d.importAlignment = extHost ? hostProps.minImportedHostPointerAlignment : 0;
  d.storage8bit = f12.storageBuffer8BitAccess;
  d.storage16bit = f11.storageBuffer16BitAccess;
  d.float16 = f12.shaderFloat16;
  d.int8 = f12.shaderInt8;
  d.integerDot = false;
  d.integerDotAccelerated = false;
  d.bufferArrays = f2.features.shaderStorageBufferArrayDynamicIndexing;
  d.maxStageStorageBuffers = std::min(p.limits.maxPerStageDescriptorStorageBuffers, p.limits.maxDescriptorSetStorageBuffers);
  if (hasExtension(pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR idot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 fi{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    fi.pNext = &idot;
    vkGetPhysicalDeviceFeatures2(pd, &fi);
    d.integerDot = idot.shaderIntegerDotProduct;
    VkPhysicalDeviceShaderIntegerDotProductPropertiesKHR idp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES_KHR};
    VkPhysicalDeviceProperties2 pi{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    pi.pNext = &idp;
    vkGetPhysicalDeviceProperties2(pd, &pi);
    d.integerDotAccelerated = idp.integerDotProduct4x8BitPackedSignedAccelerated;
  }
  d.sharedBlocks = false;
  if (hasExtension(pd, VK_KHR_WORKGROUP_MEMORY_EXPLICIT_LAYOUT_EXTENSION_NAME)) {
    VkPhysicalDeviceWorkgroupMemoryExplicitLayoutFeaturesKHR wl{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_WORKGROUP_MEMORY_EXPLICIT_LAYOUT_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 fw{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    fw.pNext = &wl;
    vkGetPhysicalDeviceFeatures2(pd, &fw);
    d.sharedBlocks = wl.workgroupMemoryExplicitLayout && wl.workgroupMemoryExplicitLayout16BitAccess;
  }
  d.coopmat = d.cooperativeMatrix = false;
  if (hasExtension(pd, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) && f12.shaderFloat16) {
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 fc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    fc.pNext = &cm;
    vkGetPhysicalDeviceFeatures2(pd, &fc);
    d.cooperativeMatrix = cm.cooperativeMatrix;
    bool engineShape = d.cooperativeMatrix && coopmatShapes(inst, pd, d.coopmatShapes);
    d.coopmat = engineShape && d.subgroupSize == 32;
  }

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  uint64_t total = 0;
  for (uint32_t h = 0; h < mem.memoryHeapCount; h++) {
    bool local = mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
    d.heaps.push_back({mem.memoryHeaps[h].size, local});
    total += mem.memoryHeaps[h].size;
  }
  // Unified memory = the GPU shares the host's RAM (integrated GPUs such as the BC-250's, CPU
  // devices). A discrete card with resizable BAR also exposes a large device-local host-visible
  // heap, but that memory sits across PCIe, so the heap sizes alone cannot tell the two apart.
  d.unifiedMemory = total > 0 && (d.type == "integrated" || d.type == "cpu");
  return d;
}

int rank(const DeviceInfo& d) {
  if (d.type == "discrete") return 0;
  if (d.type == "integrated") return 1;
  if (d.type == "virtual") return 2;
  if (d.type == "cpu") return 4;
  return 3;
}

}  // namespace

std::vector<DeviceInfo> Context::listDevices() {
  VkInstance inst = createInstance();
  std::vector<DeviceInfo> out;
  try {
    auto pds = physicalDevices(inst);
    for (uint32_t i = 0; i < pds.size(); i++) out.push_back(describe(inst, pds[i], i));
  } catch (...) {
    vkDestroyInstance(inst, nullptr);
    throw;
  }
  vkDestroyInstance(inst, nullptr);
  return out;
}

uint64_t Context::memoryBudget() const {
  if (!hasExtension(phys_, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME)) return 0;
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 mem{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
  mem.pNext = &budget;
  vkGetPhysicalDeviceMemoryProperties2(phys_, &mem);
  uint64_t b = 0;
  for (uint32_t h = 0; h < mem.memoryProperties.memoryHeapCount; h++) {
    if (mem.memoryProperties.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) b += budget.heapBudget[h];
  }
  return b;
}

Context::Context(int deviceIndex) {
  instance_ = createInstance();
  try {
    auto pds = physicalDevices(instance_);
    if (pds.empty()) throw std::runtime_error("no Vulkan device found (install a GPU driver, or mesa-vulkan-drivers for lavapipe)");
    uint32_t pick = 0;
    if (deviceIndex >= 0) {
      if (static_cast<size_t>(deviceIndex) >= pds.size())
        throw std::runtime_error("Vulkan device " + std::to_string(deviceIndex) + " does not exist (" + std::to_string(pds.size()) + " found)");
      pick = deviceIndex;
    } else {
      int best = 1 << 30;
      for (uint32_t i = 0; i < pds.size(); i++) {
        int r = rank(describe(instance_, pds[i], i));
        if (r < best) { best = r; pick = i; }
      }
    }
    phys_ = pds[pick];
    info_ = describe(instance_, phys_, pick);
    vkGetPhysicalDeviceMemoryProperties(phys_, &mem_);

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys_, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(phys_, &nq, qf.data());
    bool found = false;
    for (uint32_t i = 0; i < nq && !found; i++)
      if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) { queueFamily_ = i; found = true; }
    if (!found) throw std::runtime_error("Vulkan device " + info_.name + " has no compute queue");

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = queueFamily_;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    // zero-copy weights (Buffer's import constructor) need the first; the second only serves
    // pipelineStats() (kernel tuning); everything else is core 1.2
    std::vector<const char*> ext;
    if (info_.externalMemoryHost) ext.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exe{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    if (hasExtension(phys_, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
      VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
      f2.pNext = &exe;
      vkGetPhysicalDeviceFeatures2(phys_, &f2);
      if (exe.pipelineExecutableInfo) {
        ext.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
        exe.pNext = nullptr;
        dci.pNext = &exe;
      }
    }
    // packed 4×8-bit integer dot products (mvq.comp: activations as int8 levels)
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR idot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
    if (info_.integerDot) {
      ext.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
      idot.shaderIntegerDotProduct = VK_TRUE;
      idot.pNext = const_cast<void*>(dci.pNext);
      dci.pNext = &idot;
    }
    // f16 arithmetic where the device has it (the mmc kernels' matrices, the packed-f16 tiles mmh)
    VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    if (info_.float16) {
      f16.shaderFloat16 = VK_TRUE;
      f16.pNext = const_cast<void*>(dci.pNext);
      dci.pNext = &f16;
    }
    // cooperative matrices (the mmc kernels: f16 tiles in shared memory; checked with shaderFloat16)
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
    if (info_.cooperativeMatrix) {
      ext.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
      cm.cooperativeMatrix = VK_TRUE;
      cm.pNext = const_cast<void*>(dci.pNext);
      dci.pNext = &cm;
    }
    // shared memory as aliased blocks (the attn_mma experiment; enabled for it, unused by the engine's kernels)
    VkPhysicalDeviceWorkgroupMemoryExplicitLayoutFeaturesKHR wl{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_WORKGROUP_MEMORY_EXPLICIT_LAYOUT_FEATURES_KHR};
    if (info_.sharedBlocks) {
      ext.push_back(VK_KHR_WORKGROUP_MEMORY_EXPLICIT_LAYOUT_EXTENSION_NAME);
      wl.workgroupMemoryExplicitLayout = VK_TRUE;
      wl.workgroupMemoryExplicitLayout16BitAccess = VK_TRUE;
      wl.pNext = const_cast<void*>(dci.pNext);
      dci.pNext = &wl;
    }
    // binding arrays indexed by a workgroup's row (the batched step's _rows kernels)
    VkPhysicalDeviceFeatures core{};
    core.shaderStorageBufferArrayDynamicIndexing = info_.bufferArrays;
    dci.pEnabledFeatures = &core;
    dci.enabledExtensionCount = static_cast<uint32_t>(ext.size());
    dci.ppEnabledExtensionNames = ext.empty() ? nullptr : ext.data();
    VK_CALL(vkCreateDevice(phys_, &dci, nullptr, &device_));
    if (info_.externalMemoryHost)
      hostPointerProps_ = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(vkGetDeviceProcAddr(device_, "vkGetMemoryHostPointerPropertiesEXT"));
    if (std::find(ext.begin(), ext.end(), std::string_view(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) != ext.end()) {
      executableProps_ = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(vkGetDeviceProcAddr(device_, "vkGetPipelineExecutablePropertiesKHR"));
      executableStats_ = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(vkGetDeviceProcAddr(device_, "vkGetPipelineExecutableStatisticsKHR"));
    }
    vkGetDeviceQueue(device_, queueFamily_, 0, &queue_);
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = queueFamily_;
    VK_CALL(vkCreateCommandPool(device_, &pci, nullptr, &pool_));
  } catch (...) {
    release();
    throw;
  }
}

Context::~Context() { release(); }

// The Vulkan objects only: a constructor that throws calls this, and the language destroys the
// members (info_'s strings and heaps) once; calling the destructor itself there destroyed them
// twice
void Context::release() {
  if (pool_) vkDestroyCommandPool(device_, pool_, nullptr);
  if (device_) vkDestroyDevice(device_, nullptr);
  if (instance_) vkDestroyInstance(instance_, nullptr);
  pool_ = VK_NULL_HANDLE;
  device_ = VK_NULL_HANDLE;
  instance_ = VK_NULL_HANDLE;
}

uint32_t Context::memoryType(uint32_t typeBits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) const {
  if (prefer)
    for (uint32_t i = 0; i < mem_.memoryTypeCount; i++)
      if ((typeBits & (1u << i)) && (mem_.memoryTypes[i].propertyFlags & (want | prefer)) == (want | prefer)) return i;
  for (uint32_t i = 0; i < mem_.memoryTypeCount; i++)
    if ((typeBits & (1u << i)) && (mem_.memoryTypes[i].propertyFlags & want) == want) return i;
  throw std::runtime_error("no Vulkan memory type with the requested properties");
}

}  // namespace q36
