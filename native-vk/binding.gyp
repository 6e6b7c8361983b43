{
  "targets": [{
    "target_name": "q36vk",
    "sources": ["src/addon.cc", "src/context.cc", "src/pipeline.cc", "src/device.cc"],
    "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "generated"],
    "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
    "cflags!": ["-fno-exceptions"],
    "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
    "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wno-missing-field-initializers"],
    "libraries": ["-lvulkan"]
  }]
}
