"""A LifePlanner city from OpenStreetMap (`build`): POIs as places (`places`) and OSM opening hours in the environment's format (`hours`)."""
