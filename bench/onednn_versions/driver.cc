// Two builds of bench/onednn_versions/kernels.cc (two oneDNN versions) in one process:
// every shape timed by each in turn, the order swapped every round; out, per shape, the
// median of each version's times, the median of B's over A's per round (and quartiles),
// both implementations' names, and the geometric mean of the ratios, bf16 and f32 apart.
// usage: driver A.so B.so [ROUNDS]
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>
struct Lib {
  int (*n)();
  const char* (*name)(int);
  const char* (*impl)(int);
  double (*t)(int, int);
};
Lib load(const char* p) {
  void* h = dlopen(p, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    exit(1);
  }
  return {(int (*)())dlsym(h, "nshapes"), (const char* (*)(int))dlsym(h, "shape_name"),
          (const char* (*)(int))dlsym(h, "impl"), (double (*)(int, int))dlsym(h, "time_shape")};
}
int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: driver A.so B.so [ROUNDS]\n");
    return 2;
  }
  Lib a = load(argv[1]), b = load(argv[2]);
  int rounds = argc > 3 ? atoi(argv[3]) : 10;
  int n = a.n();
  std::vector<std::vector<double>> ta(n), tb(n);
  for (int r = 0; r < rounds; ++r)
    for (int i = 0; i < n; ++i) {
      if (r % 2) {
        tb[i].push_back(b.t(i, 30));
        ta[i].push_back(a.t(i, 30));
      } else {
        ta[i].push_back(a.t(i, 30));
        tb[i].push_back(b.t(i, 30));
      }
    }
  double lg = 0;
  int nb = 0;
  double lgf = 0;
  int nf = 0;
  for (int i = 0; i < n; ++i) {
    std::vector<double> ra;
    for (int r = 0; r < rounds; ++r) ra.push_back(tb[i][r] / ta[i][r]);
    std::sort(ra.begin(), ra.end());
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    double m = ra[rounds / 2];
    printf("%-26s A %8.4f  B %8.4f  B/A %.3f (%.2f-%.2f)  %s | %s\n", a.name(i), med(ta[i]),
           med(tb[i]), m, ra[rounds / 4], ra[rounds * 3 / 4], a.impl(i), b.impl(i));
    if (a.name(i)[0] == 'b') {
      lg += std::log(m);
      ++nb;
    } else {
      lgf += std::log(m);
      ++nf;
    }
  }
  printf("geomean B/A: bf16 %.3f  f32 %.3f\n", std::exp(lg / nb), std::exp(lgf / nf));
}
