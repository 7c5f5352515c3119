// A module for module_test: a build id and one function, as tocsin's modules export them.
extern "C" __attribute__((visibility("default"))) const char* tocsin_module_build_id() {
  return "test-build-id";
}
extern "C" __attribute__((visibility("default"))) int tocsin_test_module_answer() { return 42; }
