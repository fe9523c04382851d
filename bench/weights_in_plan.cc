// What a library matmul's weights cost in a running plan: a transformer's MLP (matmuls
// D -> H -> D over M tokens, oneDNN, float32 or bf16 with float32 outputs) chained
// through L layers, each layer's weights its own, the chain run over and over as a plan
// runs; each matmul's median time per pass (its bf16 source reorder included), against
// the same matmul repeated alone on one set of weights. Where the L layers' weights
// overflow the last-level cache, each matmul reads its weights from memory once per pass,
// as a plan does; repeated alone, they stay in the cache. The profile's rotation of
// constants (kConstantRotationBytes, src/cpu/profile.cc) is sized by this.
//
// usage: kora_bench_weights_in_plan [f32|bf16] [M D H]   (default bf16 197 384 1536:
// DeiT-S's MLP; threads from OMP_NUM_THREADS)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <string>
#include <vector>

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Written values (a buffer never written reads the zero page and runs unrealistically
// fast), small enough to stay normal floats.
void fill(dnnl::memory& m) {
  const size_t bytes = m.get_desc().get_size();
  if (m.get_desc().data_type() == dt::f32) {
    float* p = static_cast<float*>(m.get_data_handle());
    for (size_t i = 0; i < bytes / 4; ++i) p[i] = 0.01f * static_cast<float>(i * 7 % 13) - 0.06f;
  } else {
    uint16_t* p = static_cast<uint16_t*>(m.get_data_handle());
    for (size_t i = 0; i < bytes / 2; ++i) p[i] = static_cast<uint16_t>(0x3c00 + i % 64);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Layer {
  dnnl::matmul matmul;
  dnnl::memory weights, source, destination;  // source: the bf16 copy of the input
  dnnl::reorder to_bf16;
};

class Chain {
 public:
  Chain(dnnl::engine& engine, int layers, dt type, dnnl::memory::dim m, dnnl::memory::dim d,
        dnnl::memory::dim h)
      : engine_(engine), stream_(engine), type_(type) {
    input_ = dnnl::memory({{m, d}, dt::f32, tag::ab}, engine_);
    fill(input_);
    for (int l = 0; l < 2 * layers; ++l) {
      const dnnl::memory::dim k = l % 2 ? h : d, n = l % 2 ? d : h;
      const dnnl::memory::desc src({m, k}, type, tag::ab), dst({m, n}, dt::f32, tag::ab);
      const dnnl::matmul::primitive_desc pd(
          dnnl::matmul::desc(src, dnnl::memory::desc({k, n}, type, tag::any), dst), engine_);
      dnnl::memory plain({{k, n}, dt::f32, tag::ab}, engine_);
      fill(plain);
      Layer layer{dnnl::matmul(pd),
                  dnnl::memory(pd.weights_desc(), engine_),
                  dnnl::memory(pd.src_desc(), engine_),
                  dnnl::memory(dst, engine_),
                  {}};
      dnnl::reorder(plain, layer.weights).execute(stream_, plain, layer.weights);
      fill(layer.destination);
      if (type == dt::bf16)
        layer.to_bf16 =
            dnnl::reorder(dnnl::memory({{m, k}, dt::f32, tag::ab}, engine_), layer.source);
      layers_.push_back(std::move(layer));
    }
    stream_.wait();
  }

  // Runs matmul i on `in` (float32), reordered to bf16 first under bf16; its time in ms.
  double run(size_t i, dnnl::memory& in) {
    Layer& l = layers_[i];
    const auto start = std::chrono::steady_clock::now();
    dnnl::memory src = in;
    if (type_ == dt::bf16) {
      l.to_bf16.execute(stream_, in, l.source);
      src = l.source;
    }
    l.matmul.execute(
        stream_,
        {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, l.weights}, {DNNL_ARG_DST, l.destination}});
    stream_.wait();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  }

  // The median time per pass of the first layer's two matmuls, the chain run `passes`
  // times (after one untimed pass).
  std::pair<double, double> in_plan(int passes) {
    std::vector<double> up, down;
    for (int p = 0; p <= passes; ++p) {
      dnnl::memory* in = &input_;
      for (size_t i = 0; i < layers_.size(); ++i) {
        const double ms = run(i, *in);
        if (p > 0 && i < 2) (i == 0 ? up : down).push_back(ms);
        in = &layers_[i].destination;
      }
    }
    return {median(up), median(down)};
  }

  // The first layer's matmuls each repeated alone.
  std::pair<double, double> alone(int runs) {
    std::vector<double> up, down;
    for (int r = 0; r <= runs; ++r) up.push_back(run(0, input_));
    for (int r = 0; r <= runs; ++r) down.push_back(run(1, layers_[0].destination));
    return {median(up), median(down)};
  }

  double weight_megabytes() const {
    double bytes = 0;
    for (const Layer& l : layers_) bytes += static_cast<double>(l.weights.get_desc().get_size());
    return bytes / 1e6;
  }

 private:
  dnnl::engine& engine_;
  dnnl::stream stream_;
  dt type_;
  dnnl::memory input_;
  std::vector<Layer> layers_;
};

}  // namespace

int main(int argc, char** argv) {
  const bool f32 = argc > 1 && std::strcmp(argv[1], "f32") == 0;
  const dnnl::memory::dim m = argc > 4 ? std::atol(argv[2]) : 197;
  const dnnl::memory::dim d = argc > 4 ? std::atol(argv[3]) : 384;
  const dnnl::memory::dim h = argc > 4 ? std::atol(argv[4]) : 1536;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  std::printf("%s MLP %ldx%ld -> %ld -> %ld; ms per matmul, median\n", f32 ? "float32" : "bf16",
              static_cast<long>(m), static_cast<long>(d), static_cast<long>(h),
              static_cast<long>(d));
  std::printf("%7s %12s %12s %12s %12s %12s\n", "layers", "weights MB", "up alone", "up in plan",
              "down alone", "down in plan");
  for (int layers : {1, 4, 12, 24}) {
    Chain chain(engine, layers, f32 ? dt::f32 : dt::bf16, m, d, h);
    const auto [up_alone, down_alone] = chain.alone(100);
    const auto [up, down] = chain.in_plan(std::max(10, 240 / layers));
    std::printf("%7d %12.1f %12.4f %12.4f %12.4f %12.4f\n", layers, chain.weight_megabytes(),
                up_alone, up, down_alone, down);
  }
  return 0;
}
