// Vulkan errors become C++ exceptions carrying the call and the VkResult; the N-API layer turns
// them into JS exceptions or rejected promises. Nothing here ever calls exit().
#pragma once
#include <vulkan/vulkan.h>
#include <stdexcept>
#include <string>

namespace q36 {

const char* vkResultName(VkResult r);

class VkError : public std::runtime_error {
 public:
  VkError(const std::string& call, VkResult r)
      : std::runtime_error(call + " failed: " + vkResultName(r) + " (" + std::to_string(static_cast<int>(r)) + ")"), result(r) {}
  VkResult result;
};

}  // namespace q36

#define VK_CALL(expr)                                           \
  do {                                                          \
    VkResult vk_call_result_ = (expr);                          \
    if (vk_call_result_ != VK_SUCCESS) throw ::q36::VkError(#expr, vk_call_result_); \
  } while (0)
