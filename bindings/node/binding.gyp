{
  "targets": [
    {
      "target_name": "syncmem",
      "sources": [
        "src/addon.c",
        "src/locks.c",
        "src/sab.cc",
        "<!@(node build-config.js sources)"
      ],
      "include_dirs": ["<!@(node build-config.js includes)"],
      "defines": ["<!@(node build-config.js defines)"],
      "libraries": ["<!@(node build-config.js libs)"],
      "cflags": ["-fvisibility=hidden", "-Wno-missing-field-initializers"],
      "cflags_c": ["-std=gnu11", "-Werror", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "cflags_cc": ["-std=gnu++17"]
    }
  ]
}
