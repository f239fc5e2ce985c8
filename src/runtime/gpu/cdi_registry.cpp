#include "runtime/gpu/cdi_registry.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime::gpu {
namespace {

// Spec files are a few kilobytes (a large node's nvidia-ctk spec is under 100 KiB).
constexpr off_t kMaxSpecSize = 16 << 20;

struct BrokenFile {
  std::string path;
  std::string message;
  std::string kind;  // "" when the file could not be read that far
};

struct LoadedSpec {
  std::unique_ptr<CdiSpec> spec;
  std::size_t dir = 0;  // its directory's place in the list: later ones win
};

struct Loaded {
  std::vector<LoadedSpec> specs;
  std::vector<BrokenFile> broken;
};

// The `kind:` or "kind": value of a broken file, when a line gives it plainly, to tell
// whether the file matters to the devices asked for.
std::string guess_kind(const std::string& text) {
  auto at = text.find("kind");
  while (at != std::string::npos) {
    auto colon = text.find(':', at);
    auto line_end = text.find('\n', at);
    if (colon != std::string::npos && colon < line_end) {
      std::string rest =
          text.substr(colon + 1, line_end == std::string::npos ? std::string::npos : line_end - colon - 1);
      rest.erase(std::remove_if(
                     rest.begin(), rest.end(),
                     [](char c) { return c == '"' || c == '\'' || c == ',' || c == ' ' || c == '\t' || c == '\r'; }),
                 rest.end());
      if (rest.find('/') != std::string::npos) return rest;
    }
    at = text.find("kind", at + 4);
  }
  return "";
}

Loaded load_dirs(const std::vector<std::string>& dirs) {
  Loaded loaded;
  for (std::size_t priority = 0; priority < dirs.size(); ++priority) {
    std::error_code error;
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dirs[priority], error))
      if (cdi_format_of(entry.path().string())) files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      std::string text;
      try {
        struct stat st {};
        if (::stat(file.c_str(), &st) != 0) throw_errno(file);
        if (!S_ISREG(st.st_mode)) continue;
        if (st.st_size > kMaxSpecSize) throw FormatError(file + ": larger than 16 MiB, not a CDI spec");
        text = read_whole_file(file);
        loaded.specs.push_back({std::make_unique<CdiSpec>(parse_cdi_spec(text, file, *cdi_format_of(file))), priority});
      } catch (const Error& e) {
        loaded.broken.push_back({file, e.what(), guess_kind(text)});
      }
    }
  }
  return loaded;
}

struct Found {
  const CdiSpec* spec = nullptr;
  const CdiDevice* device = nullptr;
  std::size_t dir = 0;
};

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

std::vector<std::string> default_cdi_dirs() { return {"/etc/cdi", "/var/run/cdi"}; }

std::vector<CdiSelection> resolve_cdi_devices(const std::vector<std::string>& names,
                                              const std::vector<std::string>& dirs,
                                              std::vector<std::string>& warnings) {
  struct Asked {
    std::string text;
    CdiName name;
  };
  std::vector<Asked> asked;
  for (const std::string& text : names) {
    std::string why;
    auto name = parse_cdi_name(text, &why);
    if (!name) throw Error(std::string("--device ").append(text).append(": not a CDI device name: ").append(why));
    asked.push_back({text, *name});
  }
  if (asked.empty()) return {};
  const Loaded loaded = load_dirs(dirs);

  // Qualified name -> definition; a later directory wins, one directory twice is a conflict.
  std::map<std::string, Found> devices;
  std::map<std::string, std::string> conflicts;
  for (const auto& [spec, dir] : loaded.specs) {
    for (const CdiDevice& device : spec->devices) {
      const std::string qualified = spec->kind + "=" + device.name;
      auto [it, fresh] = devices.try_emplace(qualified, Found{spec.get(), &device, dir});
      if (fresh || dir > it->second.dir) {
        it->second = Found{spec.get(), &device, dir};
        conflicts.erase(qualified);
      } else if (dir == it->second.dir) {
        conflicts[qualified] = it->second.spec->path + " and " + spec->path;
      }
    }
  }
  // A broken file of that kind first, else one whose kind could not be read.
  auto broken_for = [&](const std::string& kind) -> const BrokenFile* {
    for (const std::string& wanted : {kind, std::string()})
      for (const BrokenFile& file : loaded.broken)
        if (file.kind == wanted) return &file;
    return nullptr;
  };

  std::vector<Found> chosen;
  auto choose = [&](const std::string& qualified) {
    if (auto conflict = conflicts.find(qualified); conflict != conflicts.end())
      throw Error("--device " + qualified + ": defined twice, in " + conflict->second);
    const Found& found = devices.at(qualified);
    for (const Found& earlier : chosen)
      if (earlier.device == found.device) return;
    chosen.push_back(found);
  };
  for (const Asked& a : asked) {
    const std::string qualified = a.name.kind + "=" + a.name.name;
    if (devices.count(qualified)) {
      choose(qualified);
      continue;
    }
    std::vector<std::string> of_kind;
    for (const auto& [key, found] : devices)
      if (found.spec->kind == a.name.kind) of_kind.push_back(found.device->name);
    if (a.name.name == "all" && !of_kind.empty()) {
      for (const std::string& name : of_kind) choose(a.name.kind + "=" + name);
      continue;
    }
    if (const BrokenFile* broken = broken_for(a.name.kind)) throw Error("--device " + a.text + ": " + broken->message);
    if (of_kind.empty())
      throw Error("--device " + a.text + ": no CDI spec in " + joined(dirs) + " defines " + a.name.kind +
                  " (generate one, e.g. `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, or give --cdi-dirs)");
    throw Error("--device " + a.text + ": the CDI specs of " + a.name.kind + " have no device \"" + a.name.name +
                "\" (they have: " + joined(of_kind) + ")");
  }
  for (const BrokenFile& file : loaded.broken)
    for (const Asked& a : asked)
      if (file.kind == a.name.kind) {
        warnings.push_back("ignoring a broken CDI spec: " + file.message);
        break;
      }

  std::vector<CdiSelection> selections;
  std::vector<const CdiSpec*> applied;
  for (const Found& found : chosen) {
    if (std::find(applied.begin(), applied.end(), found.spec) == applied.end()) {
      applied.push_back(found.spec);
      if (!found.spec->edits.empty())
        selections.push_back({found.spec->kind + " (" + found.spec->path + ")", found.spec->edits});
    }
    selections.push_back(
        {found.spec->kind + "=" + found.device->name + " (" + found.spec->path + ")", found.device->edits});
  }
  return selections;
}

}  // namespace capsa::runtime::gpu
