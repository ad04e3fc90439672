// The arena's AI: the guards' actions (Stunned and Knockback, which carry out the game's passive
// requests; Patrol, Attack, Runaway, Respond: each moves its guard and
// reads or writes the simulation state through its Guard, the agent's user pointer) and the guards' tree,
// built in code around the seeds' guard tree's fight branch or loaded from an XML file.
#include "arena_internal.hpp"

#include "guard_scenario.hpp"

#include <ebt/config.hpp>
#if EBT_HAS_XML
#include <ebt/xml.hpp>
#endif
#include <stdexcept>

#include <algorithm>
#include <cmath>

namespace ebt::scenarios {

using namespace arena_internal;

double Arena::move_dt(Guard& g, TimePoint now) {
    const double dt = seconds(now - g.last_move);
    g.last_move = now;
    return dt;
}

void Arena::build_tree() {
    // Every agent's user pointer is its Guard (SpawnOptions::user); the Arena pointer is captured.
    Arena* self = this;
    const auto guard = [](ActionContext& ctx) -> Guard& { return ctx.user<Guard>(); };
    const auto clamp = [self](Vec2& p) {
        p.x = std::clamp(p.x, 0.0, self->width_);
        p.y = std::clamp(p.y, 0.0, self->height_);
    };

    // Passive requests: they read the request's details (inputs) and never write the request keys:
    // the game clears a request once its action has started (took_stun / took_knockback).
    LatentActionSpec stunned;
    stunned.ports = {port<double>(kStunSeconds)};
    stunned.start = [self, guard](ActionContext& ctx, const ResumeHandle& handle) {
        Guard& g = guard(ctx);
        self->move_dt(g, ctx.now());  // the guard stands still from now on
        g.activity = Activity::Stunned;
        g.stunned = true;
        g.stun_handle = handle;
        g.stunned_until = ctx.now() + static_cast<TimePoint>(std::llround(ctx.in<double>("stun_seconds") * 1e6));
        g.took_stun = true;
    };
    stunned.on_terminate = [self, guard](ActionContext& ctx, Status) {
        Guard& g = guard(ctx);
        self->move_dt(g, ctx.now());  // the time stunned is not walked afterwards
        g.stunned = false;
        g.stun_handle = {};
    };
    registry_->add_latent_action("Stunned", stunned);

    ActionSpec knockback;
    knockback.ports = {port<double>(kKnockbackAngle)};
    knockback.on_initialize = [self, guard](ActionContext& ctx) {
        Guard& g = guard(ctx);
        self->move_dt(g, ctx.now());
        g.knock_angle = ctx.in<double>("knockback_angle");
        g.knock_until = ctx.now() + kKnockbackTime;
        g.took_knockback = true;
    };
    knockback.update = [self, guard, clamp](ActionContext& ctx) {
        Guard& g = guard(ctx);
        const double dt = self->move_dt(g, ctx.now());
        g.activity = Activity::Knockback;
        g.pos.x += std::cos(g.knock_angle) * kKnockbackSpeed * dt;
        g.pos.y += std::sin(g.knock_angle) * kKnockbackSpeed * dt;
        clamp(g.pos);
        return ctx.now() >= g.knock_until ? Status::Success : Status::Running;
    };
    registry_->add_action("Knockback", knockback);

    ActionSpec patrol;
    patrol.update = [self, guard](ActionContext& ctx) {
        Guard& g = guard(ctx);
        const double dt = self->move_dt(g, ctx.now());
        g.activity = Activity::Patrol;
        const Squad& s = self->squads_[static_cast<std::size_t>(g.squad)];
        const int n = static_cast<int>(s.route.size());
        if (move_toward(g.pos, s.route[static_cast<std::size_t>(g.waypoint)], kPatrolSpeed * dt))
            g.waypoint = (g.waypoint + s.direction + n) % n;
        return Status::Running;
    };
    registry_->add_action("Patrol", patrol);

    ActionSpec attack;
    attack.ports = {port<bool>("squad.alarm")};
    // Actions touch only their own guard (and read the rest): what they do to the squad, the
    // intruder and the totals is left in the Guard for Arena::apply_guard_effects.
    attack.on_initialize = [guard](ActionContext& ctx) { ++guard(ctx).attacks_started; };
    attack.update = [self, guard](ActionContext& ctx) {
        Guard& g = guard(ctx);
        const double dt = self->move_dt(g, ctx.now());
        g.activity = Activity::Attack;
        if (g.target < 0) return Status::Failure;  // lost from sight
        const Intruder& foe = self->intruders_[static_cast<std::size_t>(g.target)];
        if (!foe.active || foe.health <= 0) return Status::Running;  // it fell; perception will say so
        // Call the squad: raise (or keep up) the alarm at the enemy's position.
        ctx.out("squad.alarm", true);
        g.raised_alarm = true;
        g.alarm_at = foe.pos;
        g.alarm_time = ctx.now();
        if (!move_toward(g.pos, foe.pos, kRunSpeed * dt, kAttackRange * 0.9)) return Status::Running;
        // In reach: both sides hurt.
        g.struck = true;
        g.damage = kGuardDps * dt;
        g.hit_time = ctx.now();
        g.health = std::max(1.0, g.health - foe.dps * dt);
        return Status::Running;
    };
    registry_->add_action("Attack", attack);

    ActionSpec runaway;
    runaway.ports = {port<bool>(kHealthLow)};
    runaway.on_initialize = [guard](ActionContext& ctx) { ++guard(ctx).flights_started; };
    runaway.update = [self, guard, clamp](ActionContext& ctx) {
        Guard& g = guard(ctx);
        const double dt = self->move_dt(g, ctx.now());
        g.activity = Activity::Flee;
        g.health = std::min(kMaxHealth, g.health + kHealRate * dt);
        const Intruder* foe = g.target >= 0 ? &self->intruders_[static_cast<std::size_t>(g.target)] : nullptr;
        if (foe && foe->active) {
            double dx = g.pos.x - foe->pos.x, dy = g.pos.y - foe->pos.y;
            const double d = std::hypot(dx, dy);
            if (d > 1e-9) {
                dx /= d;
                dy /= d;
            } else {
                dx = 1.0;
                dy = 0.0;
            }
            g.pos.x += dx * kFleeSpeed * dt;
            g.pos.y += dy * kFleeSpeed * dt;
            clamp(g.pos);
        } else {
            move_toward(g.pos, self->squads_[static_cast<std::size_t>(g.squad)].center, kPatrolSpeed * dt, 2.0);
        }
        return ctx.in<bool>("health_low") ? Status::Running : Status::Success;
    };
    registry_->add_action("Runaway", runaway);

    ActionSpec respond;
    respond.ports = {port<bool>("squad.alarm")};
    respond.update = [self, guard](ActionContext& ctx) {
        Guard& g = guard(ctx);
        const double dt = self->move_dt(g, ctx.now());
        g.activity = Activity::Respond;
        if (!ctx.in<bool>("squad.alarm")) return Status::Success;  // the alarm is over
        move_toward(g.pos, self->squads_[static_cast<std::size_t>(g.squad)].alarm_pos, kRunSpeed * dt, 2.0);
        return Status::Running;
    };
    registry_->add_action("Respond", respond);

    tree_registry_ = registry_.get();
    if (config_.instrument) {
        if (const Registry* instrumented = config_.instrument(*registry_, *world_)) tree_registry_ = instrumented;
    }
    if (!config_.tree_file.empty()) {
#if EBT_HAS_XML
        tree_ = xml::Loader(*tree_registry_).load_file(config_.tree_file);
#else
        throw std::invalid_argument("ArenaConfig::tree_file needs XML support, which this build of ebt does not have (EBT_XML=OFF)");
#endif
    } else {
        tree_ = builtin_tree();
    }
    key_seen_ = tree_.key<bool>(kEnemySeen);
    key_low_ = tree_.key<bool>(kHealthLow);
    key_dead_ = tree_.key<bool>(kEnemyDead);
    key_stun_ = tree_.key<bool>(kStunRequest);
    key_stun_seconds_ = tree_.key<double>(kStunSeconds);
    key_knockback_ = tree_.key<bool>(kKnockbackRequest);
    key_knockback_angle_ = tree_.key<double>(kKnockbackAngle);
}

ReloadReport Arena::reload_tree_file(const std::string& path) {
#if EBT_HAS_XML
    Tree tree = xml::Loader(*tree_registry_).load_file(path);
    // The keys the game writes, from the new tree, before anything changes (UsageError naming a
    // missing or mistyped one).
    const Key<bool> seen = tree.key<bool>(kEnemySeen), low = tree.key<bool>(kHealthLow), dead = tree.key<bool>(kEnemyDead);
    const Key<bool> stun = tree.key<bool>(kStunRequest), knockback = tree.key<bool>(kKnockbackRequest);
    const Key<double> stun_seconds = tree.key<double>(kStunSeconds), knockback_angle = tree.key<double>(kKnockbackAngle);
    ReloadReport report = world_->reload(tree_.name(), tree);
    tree_ = std::move(tree);
    key_seen_ = seen;
    key_low_ = low;
    key_dead_ = dead;
    key_stun_ = stun;
    key_stun_seconds_ = stun_seconds;
    key_knockback_ = knockback;
    key_knockback_angle_ = knockback_angle;
    return report;
#else
    (void)path;
    throw std::invalid_argument("Arena::reload_tree_file needs XML support, which this build of ebt does not have (EBT_XML=OFF)");
#endif
}

Tree Arena::builtin_tree() const {
    // The passive requests first (the game's stun and knockback), then the seeds' guard tree (its
    // fight branch from guard_scenario) with the squad response between the fight and Patrol; the
    // same nodes in the same order as samples/arena.xml.
    TreeBuilder builder("arena-guard", tree_registry_ ? *tree_registry_ : *registry_);
    builder.key<bool>(kEnemySeen)
        .key<bool>(kHealthLow)
        .key<bool>(kEnemyDead)
        .key<bool>(kStunRequest)
        .key<double>(kStunSeconds)
        .key<bool>(kKnockbackRequest)
        .key<double>(kKnockbackAngle)
        .shared_key<bool>("squad", "alarm")
        .active_selector()
            .sequence()
                .check(kStunRequest)
                .action("Stunned")
            .back()
            .sequence()
                .check(kKnockbackRequest)
                .action("Knockback")
            .back();
    return add_fight_branch(builder)
            .sequence()
                .check("squad.alarm")
                .check(kHealthLow, false)
                .action("Respond")
            .back()
            .action("Patrol")
        .back()
        .end();
}

}  // namespace ebt::scenarios
