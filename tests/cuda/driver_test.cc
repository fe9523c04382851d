// The CUDA driver through dlopen (src/cuda/driver.h) on any machine: a missing
// library is reported, not fatal; the toolkit's stub libcuda (which has every entry point
// but no device) resolves every function kora calls and fails at cuInit, so the symbol
// names are checked without a GPU. Where a device exists it opens and names its
// architecture.
#include "cuda/driver.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "cuda/nvrtc_compile.h"

namespace {

using namespace kora;

TEST(CudaDriver, MissingLibraryIsReported) {
  const std::string why = cuda_driver_unavailable("/nonexistent/libcuda.so.1");
  if (!cuda_built()) {
    EXPECT_EQ(why, "kora was built without CUDA");
    return;
  }
  EXPECT_NE(why.find("no CUDA driver"), std::string::npos) << why;
}

TEST(CudaDriver, StubLibraryHasEveryFunction) {
#ifdef KORA_CUDA_STUBS_DIR
  const std::string stub = std::string(KORA_CUDA_STUBS_DIR) + "/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no stub driver at " << stub;
  const std::string why = cuda_driver_unavailable(stub);
  EXPECT_EQ(why.find("lacks"), std::string::npos) << why;
  EXPECT_NE(why.find("cuInit failed"), std::string::npos) << why;
#else
  GTEST_SKIP() << "kora was built without CUDA";
#endif
}

TEST(CudaDriver, OpensADeviceWhereThereIsOne) {
  std::string why;
  const std::unique_ptr<CudaDevice> device = CudaDevice::open(0, &why);
  if (!device) {
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << "no CUDA device: " << why;
  }
  EXPECT_FALSE(device->name().empty());
  EXPECT_EQ(device->arch().rfind("sm_", 0), 0u);
  const CudaDevice::Ptr p = device->alloc(16);
  const int in[4] = {1, 2, 3, 4};
  int out[4] = {};
  device->to_device(p, in, sizeof in);
  device->to_host(out, p, sizeof out);
  device->free(p);
  EXPECT_EQ(out[3], 4);
}

}  // namespace
