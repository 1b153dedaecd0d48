// Catch2 2.x (Debian 12) or 3.x (Ubuntu 24.04), whichever the build found.
#pragma once
#if DEVMAT_CATCH2_MAJOR >= 3
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif
