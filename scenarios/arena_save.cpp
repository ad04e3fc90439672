// The arena's save file: Arena::save() writes a run between frames, ArenaSave::read() reads one back
// and checks it, and Arena::restore() puts it back into a new Arena (docs/snapshots.md, "In the
// arena"). Everything the arena keeps outside the World is in it (positions, health, routes, squad
// alarms, intruders, the random generator, the totals), then the World's own snapshot.
//
// The file (integers little-endian, counts varints, TimePoints as 64-bit two's complement, reals as
// IEEE doubles; engine/debug/binary_io.hpp):
//
//   header    "EBTARENA" u32 version (1)
//   config    varint agents, f64 hz, u64 seed, u8 mode (0 polling, 1 event), u8 lod,
//             varint lod_interval, varint squad_size, varint intruders, string tree_file
//   clock     varint frame, u64 now, u64 rng, varint killed, flights, attacks, alarms_raised,
//             stuns, knockbacks, f64 width, f64 height
//   squads    varint count, then each: f64 center x y, varint route size, f64 x y per waypoint,
//             u8 direction (1 forward, 0 backward), f64 alarm x y, u64 raised_at, varint first, count
//   guards    varint count, then each: f64 x y health, u64 last_move, varint waypoint,
//             varint target + 1, varint interval, u8 flags (1 seen, 2 low, 4 dead, 8 stunned,
//             16 stun resumed: the game resumed the Stunned action, which ends on its next tick),
//             u8 activity, u64 stunned_until, f64 knock_angle, u64 knock_until
//   intruders varint count, then each: f64 x y goal-x goal-y health dps, u64 appear_at,
//             u64 engaged_until, u8 active, u64 next_flash, u64 next_knock
//   world     varint size, then the bytes of ebt::save_world
//   checksum  u64 FNV-1a of every byte before it
//
// Between frames the guards' per-frame effects (attacks_started, struck, ...) are always cleared
// (Arena::apply_guard_effects), and the perception grid is rebuilt at the start of every frame, so
// neither is saved. A stunned guard's resume handle is not saved either: after the World is restored,
// suspended_actions() gives a new one.
#include "arena_internal.hpp"

#include "debug/binary_io.hpp"

#include <ebt/debug/file_error.hpp>
#include <ebt/detail/hash.hpp>
#include <ebt/snapshot.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace ebt::scenarios {

using namespace arena_internal;

namespace {

constexpr std::string_view kMagic{"EBTARENA", 8};
constexpr std::uint32_t kVersion = 1;
constexpr const char* kKind = "ebt arena save";
constexpr std::uint64_t kMaxAgents = 5'000'000;  // ebt_arena's own limit on --agents

std::uint64_t checksum(std::span<const std::byte> bytes) {
    detail::Fnv1a h;
    for (const std::byte b : bytes) h(static_cast<std::uint8_t>(b));
    return h.value();
}

void write_time(debug::io::ByteWriter& out, TimePoint t) { out.u64(static_cast<std::uint64_t>(t)); }
void write_pos(debug::io::ByteWriter& out, Arena::Vec2 p) {
    out.f64(p.x);
    out.f64(p.y);
}

/// ByteReader with the checks of this file's values: each error names the file and the byte where
/// the bad value starts.
class SaveReader {
public:
    SaveReader(std::span<const std::byte> bytes, const std::string& source)
        : in_(bytes.data(), bytes.size(), source), source_(source) {}

    debug::io::ByteReader& in() noexcept { return in_; }

    [[noreturn]] void fail_at(std::uint64_t offset, const std::string& problem) const {
        throw debug::FileFormatError(source_, offset, problem);
    }
    /// A real that must be within [lo, hi] (so never NaN); `what` names it.
    double real(double lo, double hi, const std::string& what) {
        const std::uint64_t at = in_.offset();
        const double v = in_.f64();
        if (!(v >= lo && v <= hi)) {
            char text[160];
            std::snprintf(text, sizeof text, "corrupt: %s is %g, not within [%g, %g]", what.c_str(), v, lo, hi);
            fail_at(at, text);
        }
        return v;
    }
    Arena::Vec2 pos(double width, double height, const std::string& what) {
        // Movement rounds: a position may lie a hair outside the arena, never a unit.
        Arena::Vec2 p;
        p.x = real(-1.0, width + 1.0, what + " x");
        p.y = real(-1.0, height + 1.0, what + " y");
        return p;
    }
    /// A varint within [lo, hi].
    std::uint64_t whole(std::uint64_t lo, std::uint64_t hi, const std::string& what) {
        const std::uint64_t at = in_.offset();
        const std::uint64_t v = in_.varint();
        if (v < lo || v > hi)
            fail_at(at, "corrupt: " + what + " is " + std::to_string(v) + ", not from " + std::to_string(lo) + " to " +
                            std::to_string(hi));
        return v;
    }
    /// A count of items that follow, which must be exactly `expected` (the configuration says so).
    std::uint64_t exact_count(std::uint64_t expected, const char* what) {
        const std::uint64_t at = in_.offset();
        const std::uint64_t n = in_.count(what);  // (truncated when the bytes left cannot hold them)
        if (n != expected)
            fail_at(at, "corrupt: " + std::to_string(n) + " " + std::string(what) + " where the configuration has " +
                            std::to_string(expected));
        return n;
    }
    std::uint8_t byte_below(std::uint8_t limit, const std::string& what) {
        const std::uint64_t at = in_.offset();
        const std::uint8_t v = in_.u8();
        if (v >= limit) fail_at(at, "corrupt: " + what + " is " + std::to_string(v) + " (at most " + std::to_string(limit - 1) + ")");
        return v;
    }
    TimePoint time() { return static_cast<TimePoint>(in_.u64()); }

private:
    debug::io::ByteReader in_;
    std::string source_;
};

/// The squads and the arena's size a configuration gives (as Arena::setup_world lays them out).
struct Layout {
    int squads = 0;
    double width = 0, height = 0;
};
Layout layout_of(const ArenaConfig& config) {
    Layout l;
    l.squads = std::clamp((config.agents + config.squad_size / 2) / config.squad_size, 1, config.agents);
    const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(l.squads))));
    const int rows = (l.squads + cols - 1) / cols;
    l.width = cols * kSquadCell;
    l.height = rows * kSquadCell;
    return l;
}

}  // namespace

// ---- writing ------------------------------------------------------------------------------------------

std::vector<std::byte> Arena::save() const {
    std::vector<std::byte> world = save_world(*world_);  // first: it refuses a save inside a step
    debug::io::ByteWriter out;
    out.header(kMagic, kVersion);

    out.varint(static_cast<std::uint64_t>(config_.agents));
    out.f64(config_.hz);
    out.u64(config_.seed);
    out.u8(config_.mode == Mode::Event ? 1 : 0);
    out.u8(config_.lod ? 1 : 0);
    out.varint(config_.lod_interval);
    out.varint(static_cast<std::uint64_t>(config_.squad_size));
    out.varint(intruders_.size());
    out.string(config_.tree_file);

    out.varint(frame_);
    write_time(out, now_);
    out.u64(rng_);
    out.varint(totals_.intruders_killed);
    out.varint(totals_.flights);
    out.varint(totals_.attacks);
    out.varint(totals_.alarms_raised);
    out.varint(totals_.stuns);
    out.varint(totals_.knockbacks);
    out.f64(width_);
    out.f64(height_);

    out.varint(squads_.size());
    for (const Squad& s : squads_) {
        write_pos(out, s.center);
        out.varint(s.route.size());
        for (const Vec2 p : s.route) write_pos(out, p);
        out.u8(s.direction > 0 ? 1 : 0);
        write_pos(out, s.alarm_pos);
        write_time(out, s.raised_at);
        out.varint(static_cast<std::uint64_t>(s.first));
        out.varint(static_cast<std::uint64_t>(s.count));
    }
    out.varint(guards_.size());
    for (const Guard& g : guards_) {
        write_pos(out, g.pos);
        out.f64(g.health);
        write_time(out, g.last_move);
        out.varint(static_cast<std::uint64_t>(g.waypoint));
        out.varint(static_cast<std::uint64_t>(g.target + 1));
        out.varint(g.interval);
        out.u8(static_cast<std::uint8_t>((g.seen ? 1 : 0) | (g.low ? 2 : 0) | (g.dead ? 4 : 0) | (g.stunned ? 8 : 0) |
                                          (g.stunned && !g.stun_handle.valid() ? 16 : 0)));
        out.u8(static_cast<std::uint8_t>(g.activity));
        write_time(out, g.stunned_until);
        out.f64(g.knock_angle);
        write_time(out, g.knock_until);
    }
    out.varint(intruders_.size());
    for (const Intruder& in : intruders_) {
        write_pos(out, in.pos);
        write_pos(out, in.goal);
        out.f64(in.health);
        out.f64(in.dps);
        write_time(out, in.appear_at);
        write_time(out, in.engaged_until);
        out.u8(in.active ? 1 : 0);
        write_time(out, in.next_flash);
        write_time(out, in.next_knock);
    }
    out.varint(world.size());
    out.raw(world.data(), world.size());
    out.u64(checksum(out.bytes()));
    return out.bytes();
}

void Arena::save_file(const std::string& path) const {
    const std::vector<std::byte> bytes = save();
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    if (file) file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (file) file.close();
    if (!file) throw std::runtime_error("cannot write the arena save file '" + path + "'");
}

// ---- reading ------------------------------------------------------------------------------------------

const ArenaConfig& ArenaSave::config() const noexcept { return state_->config; }
TimePoint ArenaSave::time() const noexcept { return state_->now; }
std::uint64_t ArenaSave::frame() const noexcept { return state_->frame; }

ArenaSave ArenaSave::read_file(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw std::runtime_error("cannot open the arena save file '" + path + "'");
    std::vector<char> chars((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (file.bad()) throw std::runtime_error("cannot read the arena save file '" + path + "'");
    std::vector<std::byte> bytes(chars.size());
    std::transform(chars.begin(), chars.end(), bytes.begin(), [](char c) { return static_cast<std::byte>(c); });
    return read(bytes, path);
}

ArenaSave ArenaSave::read(std::span<const std::byte> bytes, const std::string& source) {
    auto state = std::make_shared<State>();
    State& st = *state;
    st.source = source;
    SaveReader r(bytes, source);
    debug::io::ByteReader& in = r.in();
    in.header(kMagic, kKind, kVersion, kVersion);

    ArenaConfig& c = st.config;
    c.agents = static_cast<int>(r.whole(1, kMaxAgents, "the guard count"));
    c.hz = r.real(1e-6, 1e6, "the frame rate (hz)");
    c.seed = in.u64();
    c.mode = r.byte_below(2, "the mode") == 1 ? Mode::Event : Mode::Polling;
    c.lod = r.byte_below(2, "the LOD flag") == 1;
    c.lod_interval = static_cast<std::uint32_t>(r.whole(1, 1'000'000, "the LOD interval"));
    c.squad_size = static_cast<int>(r.whole(1, kMaxAgents, "the squad size"));
    c.intruders = static_cast<int>(r.whole(1, kMaxAgents, "the intruder count"));
    c.tree_file = in.string(4096);
    const Layout layout = layout_of(c);
    const TimePoint frame_dt = std::max<std::int64_t>(1, std::llround(1e6 / c.hz));

    const std::uint64_t clock_at = in.offset();
    st.frame = in.varint();
    st.now = r.time();
    if (st.frame > (std::uint64_t{1} << 50) / static_cast<std::uint64_t>(frame_dt) ||
        st.now != static_cast<TimePoint>(st.frame) * frame_dt)
        r.fail_at(clock_at, "corrupt: frame " + std::to_string(st.frame) + " at " + std::to_string(st.now) +
                                " us does not fit the frame rate");
    st.rng = in.u64();
    st.totals.intruders_killed = in.varint();
    st.totals.flights = in.varint();
    st.totals.attacks = in.varint();
    st.totals.alarms_raised = in.varint();
    st.totals.stuns = in.varint();
    st.totals.knockbacks = in.varint();
    const std::uint64_t size_at = in.offset();
    st.width = in.f64();
    st.height = in.f64();
    if (st.width != layout.width || st.height != layout.height)
        r.fail_at(size_at, "corrupt: the arena's size does not fit its configuration");

    r.exact_count(static_cast<std::uint64_t>(layout.squads), "squads");
    st.squads.resize(static_cast<std::size_t>(layout.squads));
    int next_guard = 0;
    for (std::size_t i = 0; i < st.squads.size(); ++i) {
        Arena::Squad& s = st.squads[i];
        const std::string name = "squad " + std::to_string(i) + "'s ";
        s.center = r.pos(st.width, st.height, name + "centre");
        const std::size_t waypoints = static_cast<std::size_t>(in.count("waypoints"));
        if (waypoints == 0) r.fail_at(in.offset(), "corrupt: " + name + "route has no waypoint");
        s.route.resize(waypoints);
        for (Arena::Vec2& p : s.route) p = r.pos(st.width, st.height, name + "waypoint");
        s.direction = r.byte_below(2, name + "direction") == 1 ? 1 : -1;
        s.alarm_pos = r.pos(st.width, st.height, name + "alarm position");
        s.raised_at = r.time();
        const std::uint64_t first_at = in.offset();
        s.first = static_cast<int>(r.whole(0, kMaxAgents, name + "first guard"));
        s.count = static_cast<int>(r.whole(1, kMaxAgents, name + "guard count"));
        if (s.first != next_guard || s.count > c.agents - next_guard)
            r.fail_at(first_at, "corrupt: " + name + "guards do not follow the previous squad's");
        next_guard += s.count;
    }
    if (next_guard != c.agents) r.fail_at(in.offset(), "corrupt: the squads do not hold every guard");

    r.exact_count(static_cast<std::uint64_t>(c.agents), "guards");
    st.guards.resize(static_cast<std::size_t>(c.agents));
    for (const Arena::Squad& s : st.squads)
        for (int k = s.first; k < s.first + s.count; ++k) st.guards[static_cast<std::size_t>(k)].squad = static_cast<int>(&s - st.squads.data());
    for (std::size_t i = 0; i < st.guards.size(); ++i) {
        Arena::Guard& g = st.guards[i];
        const std::string name = "guard " + std::to_string(i) + "'s ";
        g.pos = r.pos(st.width, st.height, name + "position");
        g.health = r.real(0.0, kMaxHealth, name + "health");
        g.last_move = r.time();
        const auto route = st.squads[static_cast<std::size_t>(g.squad)].route.size();
        g.waypoint = static_cast<int>(r.whole(0, route - 1, name + "waypoint"));
        g.target = static_cast<int>(r.whole(0, static_cast<std::uint64_t>(c.intruders), name + "target + 1")) - 1;
        g.interval = static_cast<std::uint32_t>(r.whole(1, 1'000'000, name + "tick interval"));
        const std::uint8_t flags = r.byte_below(32, name + "flags");
        g.seen = (flags & 1) != 0;
        g.low = (flags & 2) != 0;
        g.dead = (flags & 4) != 0;
        g.stunned = (flags & 8) != 0;
        if ((flags & 16) != 0 && !g.stunned) r.fail_at(in.offset() - 1, "corrupt: " + name + "stun was resumed but it is not stunned");
        g.stun_resumed = (flags & 16) != 0;
        g.activity = static_cast<Activity>(r.byte_below(6, name + "activity"));
        g.stunned_until = r.time();
        g.knock_angle = r.real(-10.0, 10.0, name + "knockback angle");
        g.knock_until = r.time();
    }

    r.exact_count(static_cast<std::uint64_t>(c.intruders), "intruders");
    st.intruders.resize(static_cast<std::size_t>(c.intruders));
    for (std::size_t i = 0; i < st.intruders.size(); ++i) {
        Arena::Intruder& x = st.intruders[i];
        const std::string name = "intruder " + std::to_string(i) + "'s ";
        x.pos = r.pos(st.width, st.height, name + "position");
        x.goal = r.pos(st.width, st.height, name + "goal");
        x.health = r.real(-1e9, kIntruderHealth, name + "health");
        x.dps = r.real(0.0, 1e9, name + "damage per second");
        x.appear_at = r.time();
        x.engaged_until = r.time();
        x.active = r.byte_below(2, name + "active flag") == 1;
        x.next_flash = r.time();
        x.next_knock = r.time();
    }

    const std::size_t world_size = static_cast<std::size_t>(in.count("World snapshot bytes"));
    st.world_offset = in.offset();
    st.world.resize(world_size);
    in.raw(st.world.data(), world_size);

    const std::uint64_t sum_at = in.offset();
    const std::uint64_t expected = checksum(bytes.first(static_cast<std::size_t>(sum_at)));
    if (in.u64() != expected)
        r.fail_at(sum_at, "corrupt: the checksum does not match the content (the file was cut short, damaged or changed after it was written)");
    if (!in.at_end())
        r.fail_at(in.offset(), "corrupt: " + std::to_string(in.remaining()) + (in.remaining() == 1 ? " byte" : " bytes") +
                                   " after the checksum");

    ArenaSave save;
    save.state_ = std::move(state);
    return save;
}

// ---- restoring ----------------------------------------------------------------------------------------

void Arena::restore(const ArenaSave::State& saved) {
    frame_ = saved.frame;
    now_ = saved.now;
    rng_ = saved.rng;
    totals_ = saved.totals;
    width_ = saved.width;
    height_ = saved.height;
    guards_ = saved.guards;
    intruders_ = saved.intruders;
    squads_ = saved.squads;
    alarm_before_.assign(squads_.size(), 0);
    size_grid();

    // The World: its errors name the arena file and the byte in it, not in the snapshot.
    const auto in_file = [&](const debug::FileFormatError& e) {
        const std::string prefix = e.file() + ": byte " + std::to_string(e.offset()) + ": ";
        const std::string what = e.what();
        return debug::FileFormatError(saved.source, saved.world_offset + e.offset(),
                                      what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what);
    };
    WorldRestoreOptions options;
    options.source = saved.source;
    options.agent = [this](AgentHandle h) {
        WorldAgentOptions o;
        if (h.index < guards_.size()) o.user = &guards_[h.index];  // guards_ is not resized again
        if (static_cast<int>(h.index) == config_.listener_agent) o.listener = config_.listener;
        return o;
    };
    try {
        restore_world(*world_, std::span(&tree_, 1), saved.world, options);
    } catch (const debug::FileFormatError& e) {
        throw in_file(e);
    }
    // The World must be this arena's: guard i in slot i, a squad blackboard per squad, the same clock.
    const std::vector<AgentHandle> handles = world_->handles();
    const auto misfit = [&](const std::string& problem) {
        return debug::FileFormatError(saved.source, saved.world_offset, "corrupt: the World snapshot " + problem);
    };
    if (handles.size() != guards_.size())
        throw misfit("holds " + std::to_string(handles.size()) + " agents for " + std::to_string(guards_.size()) + " guards");
    for (std::size_t i = 0; i < handles.size(); ++i) {
        if (handles[i].index != i) throw misfit("has no agent in slot " + std::to_string(i));
        Guard& g = guards_[i];
        g.handle = handles[i];
        // A stunned guard's Stunned action waits for the game: its new resume handle.
        const std::vector<SuspendedAction> waiting = suspended_actions(world_->at(g.handle));
        const bool waits = g.stunned && !g.stun_resumed;
        if (waiting.size() != (waits ? 1u : 0u))
            throw misfit("does not fit guard " + std::to_string(i) + "'s stun (" + std::to_string(waiting.size()) +
                         " suspended actions)");
        if (waits) g.stun_handle = waiting.front().handle;
        g.stun_resumed = false;
    }
    for (std::size_t s = 0; s < squads_.size(); ++s) {
        SharedBlackboard* bb = world_->shared("squad-" + std::to_string(s));
        const KeyId alarm = bb ? bb->schema().find("alarm") : kNoKey;
        if (!bb || alarm == kNoKey || bb->schema().info(alarm).type != type_of<bool>())
            throw misfit("has no shared blackboard squad-" + std::to_string(s) + " with a bool alarm");
        squads_[s].blackboard = bb;
        squads_[s].alarm_key = alarm;
    }
    if (world_->frame() != frame_ || world_->now() != now_)
        throw misfit("is at frame " + std::to_string(world_->frame()) + ", the arena at frame " + std::to_string(frame_));
}

}  // namespace ebt::scenarios
