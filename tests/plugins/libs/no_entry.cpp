// A shared library that is not a graft plugin: it exports a function, but not graft_plugin_entry.
extern "C" __attribute__((visibility("default"))) int some_other_library_function() { return 42; }
