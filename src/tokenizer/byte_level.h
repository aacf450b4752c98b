// The GPT-2 byte <-> printable-character mapping shared by the ByteLevel
// pre-tokenizer and decoder. Pure functions over static tables; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace strata::tokenizer {

// Appends, for every byte of `bytes`, its printable stand-in character.
void byte_level_encode(std::string_view bytes, std::string* out);

// Maps the characters of `token` back to bytes and appends them. Returns
// false (appending nothing) if a character is not a byte stand-in.
bool byte_level_decode(std::string_view token, std::string* out);

}  // namespace strata::tokenizer
