// An exclusive advisory lock (flock) on a file, held for the object's lifetime: a path in
// (created when missing); while another process, or another open of the same file, holds
// it, the constructor calls `on_wait` once and waits. kora profile takes one per profile
// database, so two runs on one database measure one after the other, the second reusing
// what the first measured, instead of both doing all the work beside each other.
#pragma once

#include <functional>
#include <string>

namespace kora {

class FileLock {
 public:
  FileLock(const std::string& path, const std::function<void()>& on_wait = {});
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace kora
