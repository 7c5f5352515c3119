// A module for module_test: a build id and one function, as tocsin's modules export them.
extern "C" __attribute__((visibility("default"))) const char* tocsin_module_build_id() {
  return "test-build-id";
}
#ifndef TOCSIN_TEST_ANSWER
#define TOCSIN_TEST_ANSWER 42
#endif
extern "C" __attribute__((visibility("default"))) int tocsin_test_module_answer() {
  return TOCSIN_TEST_ANSWER;
}
