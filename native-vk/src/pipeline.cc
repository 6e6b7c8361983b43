#include "pipeline.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "spirv.h"
#include "vk_check.h"

namespace q36 {

Buffer::Buffer(Context& ctx, uint64_t size, bool hostVisible) : ctx_(ctx), size_(size) {
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (size == 0) throw std::runtime_error("cannot create an empty Vulkan buffer");
  VK_CALL(vkCreateBuffer(ctx.device(), &bi, nullptr, &buf_));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(ctx.device(), buf_, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  try {
    // Host-visible buffers are read back every step (logits): prefer host-cached memory, since
    // CPU reads of uncached (write-combined) memory run at a few hundred MB/s on discrete GPUs.
    ai.memoryTypeIndex = hostVisible
        ? ctx.memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
        : ctx.memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    VK_CALL(vkAllocateMemory(ctx.device(), &ai, nullptr, &mem_));
    VK_CALL(vkBindBufferMemory(ctx.device(), buf_, mem_, 0));
    if (hostVisible) VK_CALL(vkMapMemory(ctx.device(), mem_, 0, VK_WHOLE_SIZE, 0, &mapped_));
  } catch (...) {
    this->~Buffer();
    throw;
  }
}

Buffer::Buffer(Context& ctx, const std::string& path, uint64_t offset, uint64_t size) : ctx_(ctx), size_(size) {
  const auto& info = ctx.info();
  uint64_t align = info.importAlignment, page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (!ctx.hostPointerProps() || align == 0) throw std::runtime_error(info.name + " does not support VK_EXT_external_memory_host");
  // the anonymous reservation below is page-aligned, which is the import alignment only up to a page
  if (align > page || page % align != 0) throw std::runtime_error("import alignment " + std::to_string(align) + " is not a divisor of the page size");
  if (size == 0 || offset % align != 0) throw std::runtime_error("importFile: offset " + std::to_string(offset) + " is not a multiple of " + std::to_string(align));
  uint64_t bytes = (size + page - 1) / page * page;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("importFile: cannot open " + path + ": " + std::strerror(errno));
  try {
    struct stat st;
    if (fstat(fd, &st) != 0) throw std::runtime_error("importFile: cannot stat " + path + ": " + std::strerror(errno));
    uint64_t fileSize = static_cast<uint64_t>(st.st_size);
    if (offset + size > fileSize) throw std::runtime_error("importFile: range " + std::to_string(offset) + "+" + std::to_string(size) + " is past the end of " + path);
    // reserve the whole rounded range as zero pages, then map the file over its start: pages wholly
    // past the end of the file would otherwise fault (SIGBUS) when the driver pins them
    hostMap_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hostMap_ == MAP_FAILED) { hostMap_ = nullptr; throw std::runtime_error(std::string("importFile: mmap failed: ") + std::strerror(errno)); }
    hostMapBytes_ = bytes;
    uint64_t fileBytes = std::min(bytes, fileSize - offset);
    // private + writable: some drivers pin imported pages for writing; nothing ever writes them,
    // so they stay shared with the page cache
    if (mmap(hostMap_, fileBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, static_cast<off_t>(offset)) == MAP_FAILED)
      throw std::runtime_error(std::string("importFile: mmap of ") + path + " failed: " + std::strerror(errno));
    close(fd);
    fd = -1;
    VkMemoryHostPointerPropertiesEXT hp{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    VK_CALL(ctx.hostPointerProps()(ctx.device(), VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, hostMap_, &hp));
    VkExternalMemoryBufferCreateInfo ext{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
    ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.pNext = &ext;
    bi.size = bytes;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
    VK_CALL(vkCreateBuffer(ctx.device(), &bi, nullptr, &buf_));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx.device(), buf_, &req);
    if (req.size > bytes) throw std::runtime_error("importFile: the buffer needs " + std::to_string(req.size) + " bytes of memory, the mapping has " + std::to_string(bytes));
    VkImportMemoryHostPointerInfoEXT imp{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
    imp.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    imp.pHostPointer = hostMap_;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.pNext = &imp;
    ai.allocationSize = bytes;
    ai.memoryTypeIndex = ctx.memoryType(req.memoryTypeBits & hp.memoryTypeBits, 0);
    VK_CALL(vkAllocateMemory(ctx.device(), &ai, nullptr, &mem_));
    VK_CALL(vkBindBufferMemory(ctx.device(), buf_, mem_, 0));
  } catch (...) {
    if (fd >= 0) close(fd);
    this->~Buffer();
    throw;
  }
}

Buffer::~Buffer() {
  if (mapped_) vkUnmapMemory(ctx_.device(), mem_);
  if (buf_) vkDestroyBuffer(ctx_.device(), buf_, nullptr);
  if (mem_) vkFreeMemory(ctx_.device(), mem_, nullptr);
  if (hostMap_) munmap(hostMap_, hostMapBytes_);
  mapped_ = nullptr;
  hostMap_ = nullptr;
  buf_ = VK_NULL_HANDLE;
  mem_ = VK_NULL_HANDLE;
}

// Modules added at run time (addShader: experiments and tests bring their own shaders, so the
// shipped addon embeds only the engine's): the words and the reflected interface, kept for the
// process's lifetime (pipelines made from them keep pointing at them).
namespace {
struct AddedShader {
  std::string name;
  std::vector<uint32_t> words;
  EmbeddedShader s;
};
std::mutex gAddedMutex;
std::vector<std::unique_ptr<AddedShader>> gAdded;
}  // namespace

void addShader(const std::string& name, std::vector<uint32_t> words, uint32_t bindings, uint32_t push, const uint32_t local[3], const std::vector<uint32_t>& counts) {
  for (size_t i = 0; i < kEmbeddedShaderCount; i++)
    if (name == kEmbeddedShaders[i].name) throw std::runtime_error("addShader: '" + name + "' is an embedded shader");
  if (words.empty() || words[0] != 0x07230203u) throw std::runtime_error("addShader: '" + name + "' is not SPIR-V (no magic number)");
  if (counts.size() != bindings || bindings > 16) throw std::runtime_error("addShader: '" + name + "': " + std::to_string(counts.size()) + " binding counts for " + std::to_string(bindings) + " bindings (at most 16)");
  std::lock_guard<std::mutex> lock(gAddedMutex);
  for (const auto& a : gAdded)
    if (a->name == name) {
      if (a->words == words) return;  // the same module again
      throw std::runtime_error("addShader: '" + name + "' was added already with other code");
    }
  auto a = std::make_unique<AddedShader>();
  a->name = name;
  a->words = std::move(words);
  a->s = EmbeddedShader{};
  a->s.code = a->words.data();
  a->s.size = a->words.size() * sizeof(uint32_t);
  a->s.bindings = bindings;
  a->s.push = push;
  for (int k = 0; k < 3; k++) a->s.local[k] = local[k];
  for (uint32_t k = 0; k < bindings; k++) a->s.counts[k] = counts[k];
  a->s.name = a->name.c_str();
  gAdded.push_back(std::move(a));
}

static const EmbeddedShader& findShader(const std::string& name) {
  for (size_t i = 0; i < kEmbeddedShaderCount; i++)
    if (name == kEmbeddedShaders[i].name) return kEmbeddedShaders[i];
  {
    std::lock_guard<std::mutex> lock(gAddedMutex);
    for (const auto& a : gAdded)
      if (a->name == name) return a->s;
  }
  throw std::runtime_error("shader '" + name + "' is not embedded in the addon (rebuild with npm run build)");
}

Pipeline::Pipeline(Context& ctx, const std::string& shader, uint32_t bindings, std::vector<uint32_t> counts, uint32_t pushBytes, bool captureStats)
    : ctx_(ctx), name_(shader), bindings_(bindings), descriptors_(0), pushBytes_(pushBytes), counts_(std::move(counts)) {
  if (pushBytes > ctx.info().maxPushConstantsSize)
    throw std::runtime_error(shader + ": push constants of " + std::to_string(pushBytes) + " bytes exceed the device limit");
  const auto& s = findShader(shader);
  // the caller's layout against what the module declares (build-shaders.mjs reflects each one)
  if (bindings < s.bindings)
    throw std::runtime_error(shader + ": " + std::to_string(bindings) + " bindings declared, the shader uses " + std::to_string(s.bindings));
  if (pushBytes != s.push)
    throw std::runtime_error(shader + ": " + std::to_string(pushBytes) + " push-constant bytes declared, the shader's block has " + std::to_string(s.push));
  // an array binding (the batched step's per-row buffers) takes as many descriptors as it has
  // elements: the caller's count of each binding the module uses must be the module's
  if (counts_.empty()) counts_.assign(bindings, 1u);
  if (counts_.size() != bindings)
    throw std::runtime_error(shader + ": " + std::to_string(counts_.size()) + " binding counts for " + std::to_string(bindings) + " bindings");
  for (uint32_t i = 0; i < s.bindings; i++)
    if (s.counts[i] != 0 && s.counts[i] != counts_[i])
      throw std::runtime_error(shader + ": binding " + std::to_string(i) + " declared with " + std::to_string(counts_[i]) + " buffers, the shader's has " + std::to_string(s.counts[i]));
  for (uint32_t c : counts_) {
    if (c == 0) throw std::runtime_error(shader + ": a binding of 0 buffers");
    descriptors_ += c;
  }
  if (descriptors_ > ctx.info().maxStageStorageBuffers)
    throw std::runtime_error(shader + ": " + std::to_string(descriptors_) + " storage buffers, more than the device's " + std::to_string(ctx.info().maxStageStorageBuffers) + " a pipeline");
  try {
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = s.size;
    mi.pCode = s.code;
    VK_CALL(vkCreateShaderModule(ctx.device(), &mi, nullptr, &module_));
    std::vector<VkDescriptorSetLayoutBinding> b(bindings);
    for (uint32_t i = 0; i < bindings; i++) {
      b[i] = {};
      b[i].binding = i;
      b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      b[i].descriptorCount = counts_[i];
      b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = bindings;
    li.pBindings = b.data();
    VK_CALL(vkCreateDescriptorSetLayout(ctx.device(), &li, nullptr, &setLayout_));
    VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, pushBytes};
    VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &setLayout_;
    pli.pushConstantRangeCount = pushBytes ? 1 : 0;
    pli.pPushConstantRanges = &pr;
    VK_CALL(vkCreatePipelineLayout(ctx.device(), &pli, nullptr, &layout_));
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module_;
    ci.stage.pName = "main";
    ci.layout = layout_;
    if (captureStats) {
      if (!ctx.executableStats()) throw std::runtime_error(ctx.info().name + " does not report pipeline statistics (VK_KHR_pipeline_executable_properties)");
      ci.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    }
    VK_CALL(vkCreateComputePipelines(ctx.device(), VK_NULL_HANDLE, 1, &ci, nullptr, &pipe_));
  } catch (...) {
    release();
    throw;
  }
}

std::vector<std::pair<std::string, std::string>> Pipeline::statistics() const {
  std::vector<std::pair<std::string, std::string>> out;
  VkDevice d = ctx_.device();
  VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pi.pipeline = pipe_;
  uint32_t n = 0;
  VK_CALL(ctx_.executableProps()(d, &pi, &n, nullptr));
  std::vector<VkPipelineExecutablePropertiesKHR> props(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  VK_CALL(ctx_.executableProps()(d, &pi, &n, props.data()));
  for (uint32_t e = 0; e < n; e++) {
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipe_;
    ei.executableIndex = e;
    uint32_t m = 0;
    VK_CALL(ctx_.executableStats()(d, &ei, &m, nullptr));
    std::vector<VkPipelineExecutableStatisticKHR> st(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    VK_CALL(ctx_.executableStats()(d, &ei, &m, st.data()));
    for (const auto& s : st) {
      std::string v;
      switch (s.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: v = s.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: v = std::to_string(s.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: v = std::to_string(s.value.u64); break;
        default: v = std::to_string(s.value.f64);
      }
      out.emplace_back((n > 1 ? std::string(props[e].name) + ": " : std::string()) + s.name, v);
    }
  }
  return out;
}

Pipeline::~Pipeline() { release(); }

// The Vulkan objects only: a constructor that throws calls this, and the language destroys the
// members (the name) once; calling the destructor itself there destroyed the name twice (a double
// free for names too long for the string's inline buffer, as pipelineStats("matvec_router1_f32")
// on a device without statistics)
void Pipeline::release() {
  VkDevice d = ctx_.device();
  if (pipe_) vkDestroyPipeline(d, pipe_, nullptr);
  if (layout_) vkDestroyPipelineLayout(d, layout_, nullptr);
  if (setLayout_) vkDestroyDescriptorSetLayout(d, setLayout_, nullptr);
  if (module_) vkDestroyShaderModule(d, module_, nullptr);
  pipe_ = VK_NULL_HANDLE;
  layout_ = VK_NULL_HANDLE;
  setLayout_ = VK_NULL_HANDLE;
  module_ = VK_NULL_HANDLE;
}

Recorder::Recorder(Context& ctx, uint32_t maxSets, uint32_t maxDescriptors, bool profile) : ctx_(ctx) {
  try {
    if (profile) {
      maxQueries_ = maxSets + 1;
      VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qi.queryCount = maxQueries_;
      VK_CALL(vkCreateQueryPool(ctx.device(), &qi, nullptr, &queries_));
    }
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, maxDescriptors};
    VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pi.maxSets = maxSets;
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &ps;
    VK_CALL(vkCreateDescriptorPool(ctx.device(), &pi, nullptr, &pool_));
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = ctx.commandPool();
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VK_CALL(vkAllocateCommandBuffers(ctx.device(), &ai, &cmd_));
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_CALL(vkCreateFence(ctx.device(), &fi, nullptr, &fence_));
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VK_CALL(vkBeginCommandBuffer(cmd_, &bi));
    // what earlier submissions wrote (KV cache, states, logits, staging copies) must be visible
    // here: a barrier's first scope covers every command submitted before it on this queue
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
    if (queries_) {
      vkCmdResetQueryPool(cmd_, queries_, 0, maxQueries_);
      vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, usedQueries_++);
    }
  } catch (...) {
    this->~Recorder();
    throw;
  }
}

Recorder::~Recorder() {
  VkDevice d = ctx_.device();
  if (queries_) vkDestroyQueryPool(d, queries_, nullptr);
  queries_ = VK_NULL_HANDLE;
  if (fence_) vkDestroyFence(d, fence_, nullptr);
  if (cmd_) vkFreeCommandBuffers(d, ctx_.commandPool(), 1, &cmd_);
  if (pool_) vkDestroyDescriptorPool(d, pool_, nullptr);
  fence_ = VK_NULL_HANDLE;
  cmd_ = VK_NULL_HANDLE;
  pool_ = VK_NULL_HANDLE;
}

void Recorder::dispatch(const Pipeline& p, const std::vector<Binding>& buffers, const void* push,
                        uint32_t pushBytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  // The choke point: a mismatch here is a programming error that would otherwise read garbage.
  if (buffers.size() != p.descriptors())
    throw std::logic_error(p.name() + ": " + std::to_string(buffers.size()) + " buffers bound, pipeline declares " + std::to_string(p.descriptors()));
  if (pushBytes != p.pushBytes())
    throw std::logic_error(p.name() + ": " + std::to_string(pushBytes) + " push-constant bytes, pipeline declares " + std::to_string(p.pushBytes()));
  for (size_t i = 0; i < buffers.size(); i++) {
    const Binding& b = buffers[i];
    if (!b.buf) throw std::logic_error(p.name() + ": binding " + std::to_string(i) + " is null");
    // a binding past the limit would silently read out of range on some drivers
    uint64_t range = b.range == VK_WHOLE_SIZE ? b.buf->size() - b.offset : b.range;
    if (range > ctx_.info().maxStorageBufferRange)
      throw std::logic_error(p.name() + ": binding " + std::to_string(i) + " spans " + std::to_string(range) + " bytes, more than maxStorageBufferRange " + std::to_string(ctx_.info().maxStorageBufferRange));
  }
  VkDescriptorSetLayout sl = p.setLayout();
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &sl;
  VkDescriptorSet set;
  VK_CALL(vkAllocateDescriptorSets(ctx_.device(), &ai, &set));
  std::vector<VkDescriptorBufferInfo> bi(buffers.size());
  for (size_t i = 0; i < buffers.size(); i++) bi[i] = {buffers[i].buf->handle(), buffers[i].offset, buffers[i].range};
  // one write per binding: an array binding's elements are consecutive in `buffers`
  std::vector<VkWriteDescriptorSet> w(p.bindings());
  for (uint32_t i = 0, at = 0; i < p.bindings(); at += p.count(i), i++) {
    w[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w[i].dstSet = set;
    w[i].dstBinding = i;
    w[i].descriptorCount = p.count(i);
    w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w[i].pBufferInfo = &bi[at];
  }
  vkUpdateDescriptorSets(ctx_.device(), static_cast<uint32_t>(w.size()), w.data(), 0, nullptr);
  vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.handle());
  vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout(), 0, 1, &set, 0, nullptr);
  if (pushBytes) vkCmdPushConstants(cmd_, p.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, pushBytes, push);
  vkCmdDispatch(cmd_, gx, gy, gz);
  if (queries_ && usedQueries_ < maxQueries_) vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, usedQueries_++);
}

std::vector<double> Recorder::timings() {
  std::vector<double> out;
  if (!queries_ || usedQueries_ < 2) return out;
  std::vector<uint64_t> ts(usedQueries_);
  VK_CALL(vkGetQueryPoolResults(ctx_.device(), queries_, 0, usedQueries_, ts.size() * sizeof(uint64_t), ts.data(), sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  double period = ctx_.info().timestampPeriod;
  for (uint32_t i = 1; i < usedQueries_; i++) out.push_back(static_cast<double>(ts[i] - ts[i - 1]) * period);
  return out;
}

void Recorder::barrier() {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void Recorder::end() {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  VK_CALL(vkEndCommandBuffer(cmd_));
}

void Recorder::run() {
  VK_CALL(vkResetFences(ctx_.device(), 1, &fence_));
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd_;
  VK_CALL(vkQueueSubmit(ctx_.queue(), 1, &si, fence_));
  VK_CALL(vkWaitForFences(ctx_.device(), 1, &fence_, VK_TRUE, UINT64_MAX));
}

void Recorder::submitAndWait() {
  end();
  run();
}

}  // namespace q36
