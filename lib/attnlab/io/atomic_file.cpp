// Write a whole file or nothing: temporary file, fsync, rename.
#include "attnlab/io/atomic_file.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <regex>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnlab/io/file_kind.hpp"

namespace attnlab {
namespace {

std::string errno_text() { return std::strerror(errno); }

// The temporaries alive in this process, for the signal handler to remove. The handler may only
// call async-signal-safe functions (unlink, signal, raise) and may not take a lock, so the paths
// live in fixed slots: a slot's path is complete before its `used` flag is set, and the flag is
// cleared before the slot is reused.
struct TempSlot {
  std::atomic<bool> used{false};
  char path[4096] = {};
};
constexpr std::size_t kTempSlots = 64;
std::array<TempSlot, kTempSlots> g_temp_slots;
std::mutex g_temp_slots_mutex;

extern "C" void remove_temporaries_and_reraise(int sig) {
  for (TempSlot& slot : g_temp_slots)
    if (slot.used.load(std::memory_order_acquire)) ::unlink(slot.path);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_cleanup_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction current {};
      // A handler the program installed itself (or an ignored signal, as under nohup) is left alone.
      if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
        struct sigaction action {};
        action.sa_handler = remove_temporaries_and_reraise;
        sigemptyset(&action.sa_mask);
        ::sigaction(sig, &action, nullptr);
      }
    }
  });
}

// Returns the slot index holding `path`, or kTempSlots when all are taken (the file is then still
// removed on every normal path; only its removal on a signal is lost).
std::size_t register_temporary(const std::string& path) {
  if (path.size() >= sizeof(TempSlot::path)) return kTempSlots;
  std::lock_guard<std::mutex> lock(g_temp_slots_mutex);
  for (std::size_t i = 0; i < kTempSlots; ++i) {
    TempSlot& slot = g_temp_slots[i];
    if (!slot.used.load(std::memory_order_relaxed)) {
      std::memcpy(slot.path, path.c_str(), path.size() + 1);
      slot.used.store(true, std::memory_order_release);
      return i;
    }
  }
  return kTempSlots;
}

void unregister_temporary(std::size_t index) {
  if (index >= kTempSlots) return;
  std::lock_guard<std::mutex> lock(g_temp_slots_mutex);
  g_temp_slots[index].used.store(false, std::memory_order_release);
}

// Closes and unlinks the temporary file unless released after a successful rename.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& target) {
    install_cleanup_handlers();
    std::string name = target.filename().string();
    name.insert(0, 1, '.');
    // The pid lets a later run tell a temporary of a dead process (removed) from a live one (kept).
    name.append(".tmp." + std::to_string(::getpid()) + ".XXXXXX");
    pattern_ = (target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path()) / name;
    // Signals are blocked from mkstemp to registration, so no signal finds the file unregistered.
    sigset_t block, old;
    sigemptyset(&block);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, sig);
    ::pthread_sigmask(SIG_BLOCK, &block, &old);
    fd_ = ::mkstemp(pattern_.data());
    const int saved_errno = errno;
    if (fd_ >= 0) slot_ = register_temporary(pattern_);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    errno = saved_errno;
    if (fd_ < 0)
      throw OutputError("cannot create a temporary file for " + target.string() + ": " + errno_text());
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!released_) ::unlink(pattern_.c_str());
    unregister_temporary(slot_);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const char* path() const { return pattern_.c_str(); }
  void close_checked(const std::filesystem::path& target) {
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) throw OutputError("cannot write " + target.string() + ": " + errno_text());
  }
  void release() { released_ = true; }

 private:
  std::string pattern_;
  int fd_ = -1;
  std::size_t slot_ = kTempSlots;
  bool released_ = false;
};

}  // namespace

void check_output_file(const std::filesystem::path& path) {
  if (path.empty()) throw OutputError("the output path is empty");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw OutputError("cannot check " + path.string() + ": " + errno_text());
  }
  if (!S_ISREG(st.st_mode))
    throw OutputError(path.string() + " is " + file_kind(st.st_mode) +
                      ", not a regular file; refusing to replace it (give a regular file or a new name)");
}

void check_output_target(const std::filesystem::path& path) {
  check_output_file(path);
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw OutputError(dir.string() + " is not an existing directory");
  ensure_writable_directory(dir);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  write_file_atomically(path, [&](const AtomicPieceWriter& write) { write(contents); });
}

void write_file_atomically(const std::filesystem::path& path, const std::function<void(const AtomicPieceWriter& write)>& produce) {
  check_output_file(path);
  TempFile tmp(path);
  produce([&](std::string_view piece) {
    const char* data = piece.data();
    std::size_t left = piece.size();
    while (left > 0) {
      const ssize_t n = ::write(tmp.fd(), data, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw OutputError("cannot write " + path.string() + ": " + errno_text());
      }
      data += n;
      left -= static_cast<std::size_t>(n);
    }
  });
  // mkstemp creates 0600; results are meant to be shared like any other file.
  if (::fchmod(tmp.fd(), 0644) != 0 || ::fsync(tmp.fd()) != 0)
    throw OutputError("cannot write " + path.string() + ": " + errno_text());
  tmp.close_checked(path);
  if (::rename(tmp.path(), path.c_str()) != 0)
    throw OutputError("cannot write " + path.string() + ": " + errno_text());
  tmp.release();
}

void ensure_writable_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) throw OutputError("cannot create output directory " + dir.string() + ": " + ec.message());
  } else if (!std::filesystem::is_directory(dir, ec)) {
    throw OutputError("output path " + dir.string() + " is not a directory");
  }
  // Access checks lie for root; creating a file is the only honest test.
  { TempFile probe(dir / "probe"); }
  remove_stale_temporaries(dir);
}

std::string output_directory_problem(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path existing = dir.empty() ? fs::path(".") : dir;
  // The nearest ancestor that exists: where create_directories would make the first new directory.
  while (!fs::exists(existing, ec)) {
    const fs::path parent = existing.has_relative_path() ? existing.parent_path() : existing;
    if (parent == existing || parent.empty()) {
      existing = ".";
      break;
    }
    existing = parent;
  }
  if (!fs::is_directory(existing, ec))
    return existing == dir ? "output path " + dir.string() + " is not a directory"
                           : "cannot create output directory " + dir.string() + ": " + existing.string() + " is not a directory";
  try {
    // Access checks lie for root; creating a file is the only honest test.
    TempFile probe(existing / "probe");
  } catch (const OutputError& e) {
    return existing == dir ? std::string(e.what()) : "cannot create output directory " + dir.string() + ": " + e.what();
  }
  return {};
}

void remove_stale_temporaries(const std::filesystem::path& dir) {
  // .NAME.tmp.PID.XXXXXX as TempFile names them; mkstemp's suffix is six letters or digits.
  static const std::regex pattern(R"(\..+\.tmp\.([0-9]{1,10})\.[A-Za-z0-9]{6})");
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, pattern)) continue;
    const long pid = std::stol(m[1].str());
    if (pid <= 0 || pid > 0x7fffffffL) continue;
    // Only a process that no longer exists cannot be writing the file (a reused pid keeps it: harmless).
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      struct stat st {};
      if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid())
        ::unlink(it->path().c_str());
    }
  }
}

}  // namespace attnlab
