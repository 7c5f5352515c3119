// sysfs device paths: PCI location and path classification.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sys/pci.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t half = text.find('\n');
  auto a = tocsin::ParsePciDevicePath(text.substr(0, half));
  if (half == std::string_view::npos) return 0;
  auto b = tocsin::ParsePciDevicePath(text.substr(half + 1));
  if (a.ok() && b.ok()) tocsin::ClassifyPciPath(*a, *b);
  return 0;
}
