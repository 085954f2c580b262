// Declarations of the Apple API the Metal backend uses, written for
// tests/metal_api/check.py from Apple's public documentation. They exist only
// so that clang can parse and type-check csrc/lucid/backend/metal/*.mm on a
// machine without the macOS SDK; nothing is linked against them and no Apple
// SDK file was copied or consulted to write them.
//
// Every declaration carries one of these markers, naming the documentation
// page it was written from (relative to https://developer.apple.com/documentation/)
// and the first macOS version that page gives:
//
//   LUCID_DOC(macos, page)         the page was read: selector, argument types
//                                  and availability are the page's.
//   LUCID_DOC_FAMILY(macos, page)  the page was not opened: the selector and
//                                  types follow the read pages of the same
//                                  family (the same header group, e.g. the
//                                  unary arithmetic ops) or another binding's
//                                  reference (Microsoft's .NET bindings list
//                                  each Objective-C selector with its types),
//                                  and the availability is the family's.
//   LUCID_DOC_IMPLICIT(macos, page)  used by the compiler itself for literals
//                                  and for-in loops (@[...], @1, for (x in a));
//                                  check.py ties each to the syntax that needs it.
//   LUCID_DOC_STRUCTURAL(macos, page)  a superclass, protocol or type that a
//                                  used declaration names; never named by the
//                                  backend itself.
//
// The availability is real: the check parses for macOS at the wheels'
// deployment target, so an unguarded use of API newer than that target fails
// (-Werror=unguarded-availability-new). In the census run (check.py defines
// LUCID_APPLE_CENSUS) every LUCID_DOC / LUCID_DOC_FAMILY declaration is also
// marked deprecated with its page as the message, so clang itself reports
// which declarations the backend uses; one nothing uses fails the test.
#pragma once

// A second census run (LUCID_APPLE_CENSUS_STRUCTURAL) marks only the
// structural declarations, so that their use by other declarations counts.
#define LUCID_AVAILABLE(version) __attribute__((availability(macos, introduced = version)))
#define LUCID_MARK(page) __attribute__((deprecated("lucid-apple-api " page)))
#ifdef LUCID_APPLE_CENSUS
#define LUCID_CENSUS(page) LUCID_MARK(page)
#else
#define LUCID_CENSUS(page)
#endif
#ifdef LUCID_APPLE_CENSUS_STRUCTURAL
#define LUCID_CENSUS_STRUCTURAL(page) LUCID_MARK(page)
#else
#define LUCID_CENSUS_STRUCTURAL(page)
#endif

#define LUCID_DOC(macos, page) LUCID_AVAILABLE(macos) LUCID_CENSUS(page)
#define LUCID_DOC_FAMILY(macos, page) LUCID_AVAILABLE(macos) LUCID_CENSUS(page)
#define LUCID_DOC_IMPLICIT(macos, page) LUCID_AVAILABLE(macos)
#define LUCID_DOC_STRUCTURAL(macos, page) LUCID_AVAILABLE(macos) LUCID_CENSUS_STRUCTURAL(page)
