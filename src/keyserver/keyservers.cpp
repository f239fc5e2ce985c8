#include "keyserver/keyservers.hpp"

#include "keyserver/keyserver_uri.hpp"
#include "util/error.hpp"

namespace capsa::keyserver {
namespace {

using library::KeyserverEntry;

std::size_t active_count(const std::vector<KeyserverEntry>& list) {
  std::size_t n = 0;
  for (const auto& k : list) n += k.skip ? 0 : 1;
  return n;
}

Target target_of(const KeyserverEntry& entry, const library::Remotes& remotes) {
  Target target{normalize_keyserver_uri(entry.uri), "", entry.insecure};
  for (const auto& credential : remotes.credentials())
    if (same_keyserver(credential.uri, entry.uri)) target.authorization = credential.auth;
  return target;
}

}  // namespace

std::vector<KeyserverEntry> keyservers_of(const library::Remote& remote) {
  if (!remote.keyservers.empty()) return remote.keyservers;
  return {KeyserverEntry{kDefaultKeyserver, false, false, false}};
}

void add_keyserver(library::Remote& remote, const std::string& uri, unsigned order, bool insecure) {
  normalize_keyserver_uri(uri);  // one line for a malformed URI, before anything changes
  std::vector<KeyserverEntry> list = keyservers_of(remote);
  const std::size_t max_order = active_count(list) + 1;
  if (order == 0) order = static_cast<unsigned>(max_order);
  if (order > max_order)
    throw Error("--order " + std::to_string(order) + " is out of range: the highest is " + std::to_string(max_order));
  KeyserverEntry entry{uri, false, true, insecure};
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (!same_keyserver(it->uri, uri)) continue;
    if (it->external || !it->skip)
      throw Error("keyserver " + uri + " is already configured (see `capsa keyserver list`)");
    entry = *it;  // the remote's own default, skipped before: it comes back
    entry.skip = false;
    list.erase(it);
    break;
  }
  const auto at = std::min<std::size_t>(order - 1, list.size());
  list.insert(list.begin() + static_cast<std::ptrdiff_t>(at), entry);
  remote.keyservers = list;
}

void remove_keyserver(library::Remote& remote, const std::string& uri) {
  normalize_keyserver_uri(uri);
  std::vector<KeyserverEntry> list = keyservers_of(remote);
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (it->skip || !same_keyserver(it->uri, uri)) continue;
    if (active_count(list) == 1)
      throw Error("keyserver " + uri + " is the only one left: add another before removing it");
    if (it->external)
      list.erase(it);
    else
      it->skip = true;  // the remote's default is skipped, so that `keyserver add` can bring it back
    remote.keyservers = list;
    return;
  }
  throw Error("keyserver " + uri + " is not configured (see `capsa keyserver list`)");
}

std::vector<Target> targets_for(const library::Remotes& remotes, const std::optional<std::string>& url,
                                Operation operation, std::string* warning) {
  const std::string active = remotes.active();
  if (url) {
    if (const std::string exclusive = remotes.exclusive(); !exclusive.empty()) {
      bool allowed = false;
      for (const auto& k : keyservers_of(remotes.get(exclusive)))
        allowed = allowed || (!k.skip && same_keyserver(k.uri, *url));
      if (!allowed)
        throw Error("--url " + *url + ": the administrator made remote " + exclusive +
                    " exclusive, and only its keyservers may be used (see `capsa keyserver list`)");
    }
    KeyserverEntry entry{*url, false, true, false};
    for (const auto& credential : remotes.credentials())
      if (same_keyserver(credential.uri, *url)) entry.insecure = credential.insecure;
    return {target_of(entry, remotes)};
  }
  if (active.empty()) {
    if (operation == Operation::kVerify) return {};
    if (warning != nullptr)
      *warning = std::string("No default remote in use, falling back to default keyserver: ") + kDefaultKeyserver;
    return {target_of(KeyserverEntry{kDefaultKeyserver, false, false, false}, remotes)};
  }
  std::vector<Target> targets;
  for (const auto& k : keyservers_of(remotes.get(active))) {
    if (k.skip) continue;
    targets.push_back(target_of(k, remotes));
    if (operation != Operation::kVerify) break;
  }
  return targets;
}

}  // namespace capsa::keyserver
