// The registries of backends (by name) and of kernels (by op and backend), and the backend
// plans are requested for.
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

struct BackendEntry {
  std::shared_ptr<Backend> backend;
  bool listed = true;
};

// Function-local statics: registrars run during static initialization, in any file order.
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::vector<BackendEntry>& backends() {
  static std::vector<BackendEntry> list;
  return list;
}
std::map<std::pair<std::string, std::string>, KernelFactory>& kernels() {
  static std::map<std::pair<std::string, std::string>, KernelFactory> map;
  return map;
}
std::atomic<Backend*> g_requested{nullptr};

BackendEntry* entry_of(const std::string& name) {
  for (BackendEntry& e : backends()) if (e.backend->name() == name) return &e;
  return nullptr;
}

std::string joined_usable_names() {
  std::string s;
  for (const std::string& n : usable_backend_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

void register_backend(std::shared_ptr<Backend> backend, bool listed) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  if (entry_of(backend->name())) throw ValueError("backend '" + backend->name() + "' is registered twice");
  backends().push_back(BackendEntry{std::move(backend), listed});
}

Backend* find_backend(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  BackendEntry* e = entry_of(name);
  return e && e->listed && e->backend->available() ? e->backend.get() : nullptr;
}

Backend& cpu_backend() {
  static Backend* cpu = [] {
    Backend* b = find_backend("cpu");
    if (!b) throw std::logic_error("the CPU backend is not registered");
    return b;
  }();
  return *cpu;
}

std::vector<std::string> usable_backend_names() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<std::string> names;
  for (const BackendEntry& e : backends()) if (e.listed && e.backend->available()) names.push_back(e.backend->name());
  // The CPU first, then the others by name.
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return (a == "cpu") != (b == "cpu") ? a == "cpu" : a < b;
  });
  return names;
}

std::string backend_description(const std::string& name) {
  Backend* backend;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    BackendEntry* e = entry_of(name);
    if (!e) throw ValueError("unknown backend '" + name + "'");
    backend = e->backend.get();
  }
  return backend->description();
}

void set_backend_listed(const std::string& name, bool listed) {
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    BackendEntry* e = entry_of(name);
    if (!e) throw ValueError("unknown backend '" + name + "'");
    if (name == "cpu" && !listed) throw ValueError("the CPU backend cannot be hidden");
    e->listed = listed;
    if (listed) return;
  }
  // A hidden backend is no longer requested: plans go back to the CPU.
  Backend* requested = g_requested.load();
  if (requested && requested->name() == name) g_requested.compare_exchange_strong(requested, &cpu_backend());
}

// A module loaded for a backend plans and runs under that backend on the calling thread only.
thread_local Backend* t_thread_backend = nullptr;

Backend& requested_backend() {
  if (t_thread_backend) return *t_thread_backend;
  Backend* b = g_requested.load(std::memory_order_acquire);
  return b ? *b : cpu_backend();
}

Backend& usable_backend(const std::string& name) {
  Backend* b = find_backend(name);
  if (!b) throw ValueError("unknown backend '" + name + "' (usable: " + joined_usable_names() + ")");
  return *b;
}

void set_requested_backend(const std::string& name) {
  g_requested.store(&usable_backend(name), std::memory_order_release);
}

std::string set_thread_backend(const std::string& name) {
  std::string previous = t_thread_backend ? t_thread_backend->name() : std::string();
  t_thread_backend = name.empty() ? nullptr : &usable_backend(name);
  return previous;
}

namespace {
std::atomic<Precision> g_requested_precision{Precision::Normal};
// -1: none (the process-wide choice holds); else a Precision.
thread_local int t_thread_precision = -1;
constexpr const char* kPrecisionNames[] = {"normal", "high", "low"};
}  // namespace

const char* precision_name(Precision precision) { return kPrecisionNames[(int)precision]; }

Precision precision_from_name(const std::string& name) {
  for (int i = 0; i < 3; ++i) {
    if (name == kPrecisionNames[i]) return (Precision)i;
  }
  throw ValueError("unknown precision '" + name + "' (known: normal, high, low)");
}

Precision requested_precision() {
  return t_thread_precision >= 0 ? (Precision)t_thread_precision : g_requested_precision.load(std::memory_order_acquire);
}

void set_requested_precision(Precision precision) { g_requested_precision.store(precision, std::memory_order_release); }

std::string set_thread_precision(const std::string& name) {
  const int chosen = name.empty() ? -1 : (int)precision_from_name(name);
  std::string previous = t_thread_precision >= 0 ? precision_name((Precision)t_thread_precision) : "";
  t_thread_precision = chosen;
  return previous;
}

const KernelFactory* find_kernel(const std::string& op_name, const std::string& backend_name) {
  // Registration happens before main; lookups afterwards only read.
  auto& map = kernels();
  auto it = map.find({op_name, backend_name});
  return it == map.end() ? nullptr : &it->second;
}

KernelRegistrar::KernelRegistrar(const std::string& op_name, const std::string& backend_name, KernelFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  if (!kernels().emplace(std::make_pair(op_name, backend_name), std::move(factory)).second) {
    throw std::logic_error("kernel for op '" + op_name + "' on backend '" + backend_name + "' is registered twice");
  }
}

}  // namespace mnnpy
