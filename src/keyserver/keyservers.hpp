#pragma once
// The keyservers of a remote, as Apptainer keeps them in remote.yaml (`keyserver add
// --order N`, `keyserver remove`), and which of them an operation asks: search, pull and
// push the primary (the first not skipped), verify each in turn until one has the key.
#include <optional>
#include <string>
#include <vector>

#include "library/remotes.hpp"

namespace capsa::keyserver {

// A remote's keyservers in order, skipped ones included; an empty list is the default
// keyserver (kDefaultKeyserver), not external.
std::vector<library::KeyserverEntry> keyservers_of(const library::Remote& remote);

// Inserts `uri` as the remote's keyserver number `order` (1: the primary; 0: after the
// others). Error when it is already there, or `order` is past the end.
void add_keyserver(library::Remote& remote, const std::string& uri, unsigned order, bool insecure);
// Removes an added keyserver, or skips the remote's default one. Error when it is not
// configured or is the only one left.
void remove_keyserver(library::Remote& remote, const std::string& uri);

enum class Operation { kSearch, kPull, kPush, kVerify };

struct Target {
  std::string url;            // normalized (keyserver_uri.hpp)
  std::string authorization;  // "" or the Authorization header value of a `keyserver login`
  bool insecure = false;      // TLS certificate not checked
};

// The keyservers `operation` asks, in order. `url`: --url, which replaces the list (Error
// when an exclusive system remote allows only its own). Without a remote in use, search,
// pull and push use kDefaultKeyserver (`warning` says so) and verify asks none: capsa
// does not tell a public keyserver which keys an image needs unless one was configured.
std::vector<Target> targets_for(const library::Remotes& remotes, const std::optional<std::string>& url,
                                Operation operation, std::string* warning);

}  // namespace capsa::keyserver
